#!/usr/bin/env python3
"""Tests bench/protocol.py and bench/protocol_runs.py on made-up runs: Student's t quantiles and
Welch's interval against values computed by hand, a GPT sweep's tables with PyTorch's runs merged
from two process files and PyTorch minus normlab read per cell (a train-mode cell named as such),
a run in two files refused, and the PyTorch scripts' run file (rewritten after every run, --resume
keeps its runs, --shard splits them, other arguments refused). Needs no PyTorch and no scipy."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)
import protocol  # noqa: E402
import protocol_runs  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def close(a, b, tol):
    return abs(a - b) <= tol


def statistics_by_hand():
    # t(0.975, df) from tables: 12.706 (1), 4.303 (2), 2.228 (10), 2.009 (50).
    for df, t in ((1, 12.7062), (2, 4.3027), (10, 2.2281), (50, 2.0086)):
        expect(close(protocol.t_quantile(0.975, df), t, 5e-4), f"t(0.975, {df}) = {t}")
    expect(close(protocol.t_cdf(0.0, 3), 0.5, 1e-12), "t CDF at 0 is 1/2")
    expect(close(protocol.t_cdf(-2.0, 5) + protocol.t_cdf(2.0, 5), 1.0, 1e-9), "t CDF is symmetric")
    # Welch by hand: a = (1, 2, 3), b = (4, 6, 8): means 2 and 6, variances 1 and 4, se^2 = 1/3 + 4/3,
    # df = (5/3)^2 / ((1/3)^2/2 + (4/3)^2/2) = 2.941..., t(0.975, 2.941) = 3.2188, t = 4 / se = 3.0984,
    # two-sided p = 0.05479 (as scipy.stats.ttest_ind(b, a, equal_var=False) gives).
    d, lo, hi, p = protocol.welch([1.0, 2.0, 3.0], [4.0, 6.0, 8.0])
    se = math.sqrt(5 / 3)
    expect(close(d, 4.0, 1e-12), f"Welch difference is mean(b) - mean(a): {d}")
    expect(close(hi - d, 3.2188 * se, 5e-4) and close(d - lo, hi - d, 1e-9), f"Welch interval: [{lo}, {hi}]")
    expect(close(p, 0.05479, 5e-5), f"Welch p = 0.05479: {p}")
    expect(protocol.welch([1.0], [2.0, 3.0]) is None, "Welch needs two values a side")
    expect(protocol.welch([1.0, float("nan")], [2.0, 3.0]) is None, "a NaN (diverged) run does not count")


def lm_sweep(folder, rows):
    """A GPT sweep folder as normlab writes it: manifest.json and runs.csv (final evaluations)."""
    os.makedirs(folder)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"wall_seconds": 10.0}, f)
    with open(os.path.join(folder, "runs.csv"), "w") as f:
        f.write("norm,seed,batch_size,steps_planned,all_windows,val_bits_per_char,val_bits_per_char_train_mode,diverged\n")
        for norm, seed, batch, bits, train in rows:
            f.write(f"{norm},{seed},{batch},100,1,{bits},{train},0\n")


def pytorch_file(path, runs):
    with open(path, "w") as f:
        json.dump({"wall_seconds": 5.0, "runs": [
            {"norm": n, "batch_size": b, "seed": s, "steps": 100, "val_bits_per_char": v,
             "val_bits_per_char_train_mode": t} for n, b, s, v, t in runs]}, f)


def tables(d):
    nl = os.path.join(d, "normlab")
    # layer agrees with PyTorch at both batches; batch at batch 4 is 1 bit/char higher in PyTorch.
    lm_sweep(nl, [("layer", 0, 4, 2.70, ""), ("layer", 1, 4, 2.72, ""), ("layer", 0, 16, 2.80, ""),
                  ("layer", 1, 16, 2.84, ""), ("batch", 0, 4, 2.90, 1.5), ("batch", 1, 4, 2.91, 1.6),
                  ("batch", 0, 16, 3.00, 2.9), ("batch", 1, 16, 3.04, 2.8)])
    p0, p1 = os.path.join(d, "p0.json"), os.path.join(d, "p1.json")
    pytorch_file(p0, [("layer", 4, 0, 2.71, float("nan")), ("layer", 16, 0, 2.81, float("nan")),
                      ("batch", 4, 0, 3.90, 1.55), ("batch", 16, 0, 3.01, 2.85)])
    pytorch_file(p1, [("layer", 4, 1, 2.73, float("nan")), ("layer", 16, 1, 2.83, float("nan")),
                      ("batch", 4, 1, 3.92, 1.58), ("batch", 16, 1, 3.03, 2.88)])
    out = subprocess.run([sys.executable, os.path.join(BENCH, "protocol.py"), "--markdown", "--ci", nl, p0, p1],
                         capture_output=True, text=True)
    expect(out.returncode == 0, f"protocol.py exit status {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    row = lambda start: next((l for l in lines if l.startswith(start)), "")
    expect("| batch | 4 | +1.005 |" in out.stdout and row("| batch | 4 |").endswith("| distinguishable |"),
           f"batch at 4 differs by +1.005 and is distinguishable: {row('| batch | 4 |')!r}")
    expect("not distinguishable" in row("| layer | 4 |"), f"layer at 4 is not: {row('| layer | 4 |')!r}")
    expect("not distinguishable" in row("| batch train mode | 16 |"), "the train-mode cells are compared too")
    expect(any(l.startswith("5 of 6 cells not distinguishable; distinguishable: batch at batch 4") for l in lines),
           "the count of cells and the one that differs")
    expect("summed over its 2 processes" in out.stdout, "two PyTorch files: their wall times are summed, said so")
    # The same run in both files is refused.
    pytorch_file(p1, [("layer", 4, 0, 2.71, float("nan"))])
    dup = subprocess.run([sys.executable, os.path.join(BENCH, "protocol.py"), nl, p0, p1], capture_output=True, text=True)
    expect(dup.returncode != 0 and "in two PyTorch files" in dup.stderr, f"a run in two files: {dup.stderr!r}")


def train_mode_cell(d):
    """A distinguishable train-mode cell is named as the train-mode one, not as the eval-mode cell."""
    nl = os.path.join(d, "normlab")
    lm_sweep(nl, [("batch", 0, 4, 2.90, 1.50), ("batch", 1, 4, 2.91, 1.51)])
    pt = os.path.join(d, "p.json")
    pytorch_file(pt, [("batch", 4, 0, 2.90, 2.50), ("batch", 4, 1, 2.92, 2.52)])
    out = subprocess.run([sys.executable, os.path.join(BENCH, "protocol.py"), "--markdown", "--ci", nl, pt],
                         capture_output=True, text=True)
    expect(out.returncode == 0, f"protocol.py exit status {out.returncode}: {out.stderr}")
    expect("1 of 2 cells not distinguishable; distinguishable: batch train mode at batch 4" in out.stdout,
           f"the train-mode cell named as such: {out.stdout[-300:]!r}")


def run_file(d):
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--norms", default="a,b")
    protocol_runs.add_arguments(parser)
    path = os.path.join(d, "runs.json")

    def args(*argv):
        a = parser.parse_args(["--out", path, *argv])
        protocol_runs.parse_shard(parser, a)
        return a

    first = protocol_runs.RunFile(path, False, {"torch": "test"}, args())
    first.add({"norm": "a", "batch_size": 2, "seed": 0})
    with open(path) as f:
        saved = json.load(f)
    expect(len(saved["runs"]) == 1 and saved["torch"] == "test", "the file holds each run as soon as it is added")
    expect(not [n for n in os.listdir(d) if ".tmp" in n], "no temporary file is left")
    again = protocol_runs.RunFile(path, True, {"torch": "test"}, args("--norms", "a"))
    expect(again.done("a", 2, 0) and not again.done("a", 2, 1), "--resume keeps the runs the file holds")
    expect(again.skip(0, "a", 2, 0) and not again.skip(1, "a", 2, 1), "a kept run is skipped, a new one is not")
    fresh = protocol_runs.RunFile(path, False, {"torch": "test"}, args())
    expect(not fresh.done("a", 2, 0), "without --resume the file starts empty")
    shard = protocol_runs.RunFile(None, False, {}, args("--shard", "1/3"))
    expect([i for i in range(7) if not shard.skip(i, "a", 1, i)] == [1, 4], "--shard 1/3 runs runs 1, 4, ...")
    # --resume with another learning rate: refused, naming the file.
    first.write()
    try:
        protocol_runs.RunFile(path, True, {}, args("--lr", "2"))
        expect(False, "--resume with other arguments is refused")
    except SystemExit as e:
        expect("other arguments" in str(e), f"the refusal says why: {e}")


def main():
    statistics_by_hand()
    with tempfile.TemporaryDirectory() as d:
        tables(d)
    with tempfile.TemporaryDirectory() as d:
        train_mode_cell(d)
    with tempfile.TemporaryDirectory() as d:
        run_file(d)
    for f in failures:
        print("FAIL:", f)
    print(f"{'FAILED' if failures else 'passed'}: bench/protocol.py, bench/protocol_runs.py")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

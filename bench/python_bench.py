#!/usr/bin/python3
"""The Python overhead benchmark (`make bench-python`): the MLP training step (forward,
cross-entropy, zero_grad, backward, SGD with momentum 0.9) driven from Python with normlab's package
and with PyTorch eager, beside the same step in C++ (bench_kernels' "train step mlp ..." rows), for
2-32-32-2 at batch 32 (where per-op overhead decides) and 784-256-256-10 at batch 128 (where the
matrix products do), with no norm, BatchNorm and LayerNorm.

The three sides alternate in rounds (normlab from Python, PyTorch, normlab in C++; ROUNDS times) so
that a slow minute of a shared machine falls on all of them; each side reports the median over
repetitions of the mean time per step (a repetition runs for at least --min-time seconds). The table
gives, per workload, the medians of the last round and the median over rounds of:
  PyTorch / normlab-Python   (above 1: normlab from Python is faster than PyTorch eager)
  PyTorch / normlab-C++      (the C++ step's ratio)
  and the Python ratio over the C++ one (1 when driving normlab from Python costs nothing).

Run with Debian's /usr/bin/python3 and python3-torch; PYTHONPATH must reach the built package
(build/python). Writes JSON to --out when given.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1, help="intra-op threads on every side (default 1)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the three sides, alternating (default 3)")
    p.add_argument("--repetitions", type=int, default=3, help="repetitions per round; the median is kept")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per repetition, at least")
    p.add_argument("--filter", default=".", help="regex of workload names")
    p.add_argument("--bench-kernels", default="build/bench/bench_kernels", help="normlab's C++ benchmark binary")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    a = p.parse_args()
    for name in ("threads", "rounds", "repetitions"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(a, name)}")
    if a.min_time <= 0:
        p.error(f"--min-time must be positive, got {a.min_time}")
    try:
        re.compile(a.filter)
    except re.error as e:
        p.error(f"--filter is not a valid regex: {e}")
    if not os.access(a.bench_kernels, os.X_OK):
        p.error(f"--bench-kernels {a.bench_kernels} is not an executable (make bench builds it)")
    return a


args = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # before torch loads OpenBLAS
os.environ["OMP_NUM_THREADS"] = str(args.threads)
try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"bench/python_bench.py: {e}: apt-get install python3-numpy python3-torch", file=sys.stderr)
    sys.exit(3)
try:
    import normlab
except ImportError:
    print("bench/python_bench.py: normlab's Python package is not on PYTHONPATH (build/python)", file=sys.stderr)
    sys.exit(3)
torch.set_num_threads(args.threads)
normlab.set_num_threads(args.threads)

WORKLOADS = [(w, b, n) for w, b in (((2, 32, 32, 2), 32), ((784, 256, 256, 10), 128))
             for n in ("none", "batch", "layer")]


def name_of(widths, batch, norm):
    return f"train step mlp {'-'.join(map(str, widths))} b{batch} {norm}"


def mlp(nn, widths, norm):
    """Linear -> [BatchNorm1d | LayerNorm] -> ReLU per hidden layer, then the classifier Linear, of
    either package's nn (normlab.nn and torch.nn have the same names and arguments); as
    bench/pytorch_bench.py's train_step and bench_kernels' rows."""
    layers = []
    for i, o in zip(widths[:-2], widths[1:-1]):
        layers.append(nn.Linear(i, o))
        if norm == "batch":
            layers.append(nn.BatchNorm1d(o))
        elif norm == "layer":
            layers.append(nn.LayerNorm(o))
        layers.append(nn.ReLU())
    layers.append(nn.Linear(widths[-2], widths[-1]))
    return nn.Sequential(*layers).train()


def normlab_step(widths, batch, norm):
    normlab.manual_seed(0)
    model = mlp(normlab.nn, widths, norm)
    opt = normlab.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = normlab.tensor(rng.normal(size=(batch, widths[0])).astype(np.float32))
    y = rng.integers(0, widths[-1], size=batch)

    def step():
        loss = normlab.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def torch_step(widths, batch, norm):
    torch.manual_seed(0)
    model = mlp(torch.nn, widths, norm)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, widths[0], generator=g)
    y = torch.randint(0, widths[-1], (batch,), generator=g)

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def median_time(step):
    """The median over repetitions of the mean seconds per call (each repetition >= min_time)."""
    for _ in range(3):
        step()
    means = []
    for _ in range(args.repetitions):
        n, start = 0, time.perf_counter()
        while True:
            step()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= args.min_time:
                break
        means.append(elapsed / n)
    return statistics.median(means)


def cxx_times(names):
    """bench_kernels' medians (seconds) for these workload names, in one run of the binary."""
    # The names hold letters, digits, spaces and dashes only: Google Benchmark's regex takes them as
    # they are (it refuses Python's re.escape of a space).
    pattern = "^(" + "|".join(names) + ")(/real_time)?$"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([args.bench_kernels, f"--threads={args.threads}", f"--benchmark_filter={pattern}",
                        f"--benchmark_repetitions={args.repetitions}", "--benchmark_report_aggregates_only=true",
                        f"--benchmark_min_time={args.min_time}", f"--benchmark_out={f.name}",
                        "--benchmark_out_format=json"], check=True, stdout=subprocess.DEVNULL)
        data = json.load(open(f.name))
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    out = {}
    for b in data["benchmarks"]:
        # one repetition has no aggregates: its single run is the median
        if b.get("aggregate_name") == "median" or (args.repetitions == 1 and b.get("run_type") == "iteration"):
            out[b["run_name"].replace("/real_time", "")] = b["real_time"] * scale[b["time_unit"]]
    missing = [n for n in names if n not in out]
    if missing:
        sys.exit(f"bench/python_bench.py: bench_kernels has no workload {missing[0]!r}")
    return out


def main():
    chosen = [w for w in WORKLOADS if re.search(args.filter, name_of(*w))]
    if not chosen:
        sys.exit(f"bench/python_bench.py: no workload matches --filter {args.filter!r}")
    names = [name_of(*w) for w in chosen]
    nl_steps = {name_of(*w): normlab_step(*w) for w in chosen}
    pt_steps = {name_of(*w): torch_step(*w) for w in chosen}
    rounds = []
    for r in range(args.rounds):
        print(f"== round {r + 1} of {args.rounds}: normlab from Python, PyTorch, normlab in C++", file=sys.stderr)
        nl = {n: median_time(nl_steps[n]) for n in names}
        pt = {n: median_time(pt_steps[n]) for n in names}
        cx = cxx_times(names)
        rounds.append({"normlab_python": nl, "pytorch": pt, "normlab_cxx": cx})

    rows = []
    for n in names:
        py_ratio = [rd["pytorch"][n] / rd["normlab_python"][n] for rd in rounds]
        cxx_ratio = [rd["pytorch"][n] / rd["normlab_cxx"][n] for rd in rounds]
        share = [a / b for a, b in zip(py_ratio, cxx_ratio)]
        last = rounds[-1]
        rows.append({"workload": n, "threads": args.threads,
                     "normlab_python_s": last["normlab_python"][n], "pytorch_s": last["pytorch"][n],
                     "normlab_cxx_s": last["normlab_cxx"][n],
                     "python_ratio": statistics.median(py_ratio), "python_ratio_range": [min(py_ratio), max(py_ratio)],
                     "cxx_ratio": statistics.median(cxx_ratio), "cxx_ratio_range": [min(cxx_ratio), max(cxx_ratio)],
                     "python_over_cxx": statistics.median(share)})

    head = ["workload", "thr", "normlab (Python)", "PyTorch (Python)", "normlab (C++)",
            "PyTorch / normlab-Py", "PyTorch / normlab-C++", "Py ratio / C++ ratio"]
    body = [[r["workload"], str(r["threads"]), f"{r['normlab_python_s'] * 1e6:.1f} us", f"{r['pytorch_s'] * 1e6:.1f} us",
             f"{r['normlab_cxx_s'] * 1e6:.1f} us",
             f"{r['python_ratio']:.2f}x ({r['python_ratio_range'][0]:.2f}-{r['python_ratio_range'][1]:.2f})",
             f"{r['cxx_ratio']:.2f}x ({r['cxx_ratio_range'][0]:.2f}-{r['cxx_ratio_range'][1]:.2f})",
             f"{r['python_over_cxx']:.3f}"] for r in rows]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for b in body:
            print("| " + " | ".join(b) + " |")
    else:
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        for b in body:
            print("  ".join(c.ljust(w) for c, w in zip(b, widths)))
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump({"rows": rows, "rounds": rounds, "torch": torch.__version__}, f, indent=1)
        os.replace(args.out + ".tmp", args.out)


main()

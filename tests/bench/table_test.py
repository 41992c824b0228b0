#!/usr/bin/env python3
"""Tests bench/table.py on made-up result files: rounds pair in order (ratio = median of the
rounds' ratios, with its range), targets are computed from the rows they name and judged on the
median, and a target whose rows are missing is left out. Needs no PyTorch."""
import json
import os
import subprocess
import sys
import tempfile

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "table.py")


def normlab_file(path, threads, rows):
    """rows: [(name, seconds, extra counters)] as Google Benchmark's median aggregates."""
    bench = [dict({"name": f"{n}/real_time_median", "run_name": f"{n}/real_time", "aggregate_name": "median",
                   "real_time": s * 1e9, "time_unit": "ns"}, **extra) for n, s, extra in rows]
    with open(path, "w") as f:
        json.dump({"context": {"normlab_threads": str(threads), "highway_target": "TEST"}, "benchmarks": bench}, f)


def pytorch_file(path, threads, rows):
    """rows: [(name, seconds, work, unit)]."""
    res = [{"name": n, "threads": threads, "median_s": s, "work": w, "unit": u} for n, s, w, u in rows]
    with open(path, "w") as f:
        json.dump({"context": {"torch": "test", "blas": {}}, "results": res}, f)


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        bn = "batchnorm1d forward+backward 4096x1024"
        mm = "matmul 512x1024 @ 1024x1024"
        files = []
        # Three rounds: BatchNorm ratios 4.0/1.0, 1.0/0.5, 7.0/2.0 (median 3.5: met, 2 of 3 rounds; a
        # pairing out of order would give 2.0); GEMM 1 thread at 0.95, 0.85, 0.80 of the FMA peak
        # (the peak row at 100 GFLOP/s; median 0.85: not met, 1 of 3); a cost target (at most 1.5x): the penalty step with BatchNorm
        # over no norm 1.2, 1.6, 1.4 (median 1.4: met, 2 of 3: at most, not at least).
        pen = "penalty step mlp 784-256-256-10 b128"
        for k, (nl_bn, pt_bn, nl_rate, cost) in enumerate([(1.0, 4.0, 95.0, 1.2), (0.5, 1.0, 85.0, 1.6),
                                                           (2.0, 7.0, 80.0, 1.4)]):
            p = os.path.join(d, f"n{k}.json")
            normlab_file(p, 1, [(bn, nl_bn, {"bytes_per_second": 1e9}), (mm, 1.0, {"GFLOP/s": nl_rate}),
                                ("peak fma f32", 0.001, {"GFLOP/s": 100.0}),
                                ("stream triad 2^25", 0.01, {"bytes_per_second": 4e9}),
                                (pen + " none", 0.002, {}), (pen + " batch", 0.002 * cost, {})])
            q = os.path.join(d, f"p{k}.json")
            pytorch_file(q, 1, [(bn, pt_bn, 1e9, "byte"), (mm, 1.0, 100e9, "flop")])
            files += [p, q]
        out = subprocess.run([sys.executable, TABLE] + files, capture_output=True, text=True)
        expect(out.returncode == 0, f"exit status {out.returncode}: {out.stderr}")
        text = out.stdout
        lines = text.splitlines()
        row = next((l for l in lines if l.startswith(bn)), "")
        expect("3.50x (2.00x-4.00x)" in row, f"BatchNorm row has the median ratio and range: {row!r}")
        target = next((l for l in lines if l.startswith("BatchNorm1d forward+backward")), "")
        expect("3.50x (2.00x-4.00x)" in target and " met" in target and "2/3" in target,
               f"BatchNorm target met on the median, 2 of 3 rounds: {target!r}")
        gemm = next((l for l in lines if l.startswith("GEMM 512x1024x1024, 1 thread")), "")
        expect("0.85x (0.80x-0.95x)" in gemm and "not met" in gemm and "1/3" in gemm,
               f"GEMM target not met (median 0.85 < 0.9), 1 of 3 rounds: {gemm!r}")
        peak = next((l for l in lines if l.startswith("FMA peak")), "")
        expect("100.0 GFLOP/s at 1 thread" in peak, f"the header gives the FMA peak: {peak!r}")
        mm_row = next((l for l in lines if l.startswith(mm)), "")
        expect(mm_row.rstrip().endswith("85%"), f"the GEMM row's share of the peak (85 of 100): {mm_row!r}")
        expect(row.rstrip().endswith("25%"), f"a GB/s row's share of the STREAM triad (1 of 4): {row!r}")
        peak_row = next((l for l in lines if l.startswith("peak fma f32")), "")
        expect(peak_row.rstrip().endswith("-"), f"the ceiling's own row has no share: {peak_row!r}")
        cost = next((l for l in lines if l.startswith(pen + ": BatchNorm <= 1.5x no norm")), "")
        expect("1.40x (1.20x-1.60x)" in cost and " met" in cost and "not met" not in cost and "2/3" in cost,
               f"cost target met at most 1.5x on the median, 2 of 3 rounds: {cost!r}")
        expect("LayerNorm" not in text, "targets whose rows are missing are left out")

        # One round: no range, plain ratio.
        out1 = subprocess.run([sys.executable, TABLE, files[0], files[1]], capture_output=True, text=True)
        row1 = next((l for l in out1.stdout.splitlines() if l.startswith(bn)), "")
        expect(" 4.00x " in row1 and "(" not in row1,
               f"one round: the ratio alone: {row1!r}")

        # No files: the usage, status 2.
        none = subprocess.run([sys.executable, TABLE], capture_output=True, text=True)
        expect(none.returncode == 2 and "usage" in none.stderr, "no files: usage and status 2")

    for f in failures:
        print("FAIL:", f)
    print(f"{'FAILED' if failures else 'passed'}: bench/table.py")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints one table from bench_kernels JSON files (Google Benchmark, --benchmark_out) and
pytorch_bench.py JSON files: workload, threads, normlab median, PyTorch median, the speedup
PyTorch time / normlab time (above 1: normlab is faster), and both rates (GFLOP/s or GB/s).

usage: table.py [--markdown] FILE.json ...   (the file kinds are told apart by their content)
"""
import json
import sys


def load(paths):
    """{(name, threads): {"normlab": (seconds, rate, unit)}, ...} and the context lines."""
    rows, context, order = {}, [], []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        if "benchmarks" in data:  # Google Benchmark
            ctx = data.get("context", {})
            threads = int(ctx.get("normlab_threads", 1))
            if not any("normlab" in c for c in context):
                caches = ", ".join(f"L{c['level']}{c['type'][0].lower() if c['type'] != 'Unified' else ''} "
                                   f"{c['size'] // 1024} KiB" for c in ctx.get("caches", []))
                context.append(f"normlab: Highway target {ctx.get('highway_target', '?')}, "
                               f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz ({caches})")
            for b in data["benchmarks"]:
                if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"):
                    continue
                name = b.get("run_name", b["name"]).replace("/real_time", "")
                scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
                sec = b["real_time"] * scale
                if "GFLOP/s" in b:
                    rate, unit = b["GFLOP/s"], "GFLOP/s"
                elif "bytes_per_second" in b:
                    rate, unit = b["bytes_per_second"] / 1e9, "GB/s"
                else:
                    rate, unit = None, ""
                key = (name, threads)
                if key not in rows:
                    order.append(key)
                rows.setdefault(key, {})["normlab"] = (sec, rate, unit)
        else:  # pytorch_bench.py
            ctx = data.get("context", {})
            blas = ctx.get("blas", {})
            line = f"PyTorch {ctx.get('torch', '?')}: BLAS {', '.join(blas.get('libraries', [])) or '?'}"
            if "openblas_config" in blas:
                line += f" ({blas['openblas_config']})"
            if line not in context:
                context.append(line)
            for r in data["results"]:
                key = (r["name"], int(r["threads"]))
                if key not in rows:
                    order.append(key)
                unit = {"flop": "GFLOP/s", "byte": "GB/s"}.get(r["unit"])  # None: a time only
                rate = r["work"] / r["median_s"] / 1e9 if unit else None
                rows.setdefault(key, {})["pytorch"] = (r["median_s"], rate, unit or "")
    return rows, context, order


def fmt_time(sec):
    if sec is None:
        return "-"
    if sec >= 1:
        return f"{sec:.3f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.3f} ms"
    return f"{sec * 1e6:.2f} us"


def main(argv):
    markdown = "--markdown" in argv
    paths = [a for a in argv if a != "--markdown"]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    rows, context, order = load(paths)
    # Group by workload (in first-seen order), then by thread count.
    names = []
    for name, _ in order:
        if name not in names:
            names.append(name)
    header = ["workload", "threads", "normlab", "PyTorch", "PyTorch/normlab", "normlab rate", "PyTorch rate"]
    table = []
    for name in names:
        for threads in sorted(t for n, t in rows if n == name):
            r = rows[(name, threads)]
            n, p = r.get("normlab"), r.get("pytorch")
            ratio = f"{p[0] / n[0]:.2f}x" if n and p else "-"
            rate = lambda x: f"{x[1]:.1f} {x[2]}" if x and x[1] is not None else "-"
            table.append([name, str(threads), fmt_time(n[0] if n else None), fmt_time(p[0] if p else None), ratio,
                          rate(n), rate(p)])
    for line in context:
        print(line)
    print("medians over repetitions; PyTorch/normlab > 1 means normlab is faster")
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(row[i]) for row in table)) if table else len(h) for i, h in enumerate(header)]
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        print("  ".join("-" * w for w in widths))
        for row in table:
            print("  ".join((c.ljust(w) if i == 0 else c.rjust(w)) for i, (c, w) in enumerate(zip(row, widths))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

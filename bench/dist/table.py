#!/usr/bin/env python3
"""The data-parallel benchmark's tables from bench/dist/run.sh's raw JSON lines: per workload and
setup, normlab's and PyTorch's medians (the median over rounds of each round's median) and the ratio
PyTorch time / normlab time (median and range of the per-round ratios); then what data-parallel
costs on this machine: the step over 2 ranks against one process with 2 threads, SyncBatchNorm
against BatchNorm, and the allreduce's rate. Usage: table.py RAW.jsonl"""
import json
import statistics
import sys
from collections import defaultdict


def setup_name(ranks, threads):
    return f"{ranks} ranks x {threads} thread" if ranks > 1 else f"1 process, {threads} thread{'s' if threads > 1 else ''}"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: table.py RAW.jsonl")
    # (name, ranks, threads) -> side -> round -> median microseconds
    t = defaultdict(lambda: defaultdict(dict))
    order = []
    with open(sys.argv[1]) as f:
        for line in f:
            r = json.loads(line)
            key = (r["name"], r["ranks"], r["threads"])
            if key not in order:
                order.append(key)
            t[key][r["side"]][r["round"]] = r.get("median_us")

    def med(key, side):
        v = [x for x in t[key].get(side, {}).values() if x is not None]
        return statistics.median(v) if v else None

    def fmt_us(v):
        if v is None:
            return "n/a"
        return f"{v / 1000:.3f} ms" if v >= 1000 else f"{v:.1f} us"

    print("| workload | setup | normlab | PyTorch | PyTorch / normlab (median, range over rounds) |")
    print("|---|---|---|---|---|")
    for key in sorted(order, key=lambda k: (k[0], k[1], k[2])):
        name, ranks, threads = key
        n, p = med(key, "normlab"), med(key, "pytorch")
        ratios = [t[key]["pytorch"][r] / t[key]["normlab"][r] for r in t[key].get("normlab", {})
                  if t[key]["normlab"][r] and t[key].get("pytorch", {}).get(r)]
        ratio = (f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})" if ratios
                 else "PyTorch: CUDA only" if "syncbatch" in name else "n/a")
        print(f"| {name} | {setup_name(ranks, threads)} | {fmt_us(n)} | {fmt_us(p)} | {ratio} |")

    print()
    print("| what data-parallel costs on this machine | normlab | PyTorch |")
    print("|---|---|---|")
    names = sorted({k[0] for k in order})
    for name in names:
        if not name.startswith("ddp step"):
            continue
        row = []
        for side in ("normlab", "pytorch"):
            one, two = med((name, 1, 2), side), med((name, 2, 1), side)
            row.append(f"{two / one:.2f}x" if one and two else "n/a")
        print(f"| {name}: 2 ranks x 64 samples, time / one process x 128 on 2 threads | {row[0]} | {row[1]} |")
    for arch in ("mlp 784-256-256-10", "cnn"):
        for ranks, threads in ((2, 1), (1, 2)):
            b, s = med((f"ddp step {arch} b128 batch", ranks, threads), "normlab"), \
                med((f"ddp step {arch} b128 syncbatch", ranks, threads), "normlab")
            if b and s:
                print(f"| {arch} step, SyncBatchNorm time / BatchNorm time, {setup_name(ranks, threads)} | "
                      f"{s / b:.3f}x | CUDA only |")
    for name in names:
        if name.startswith("allreduce"):
            floats = int(name.split()[-1])
            row = []
            for side in ("normlab", "pytorch"):
                v = med((name, 2, 1), side)
                row.append(f"{4 * floats / v / 1e3:.2f} GB/s of gradients" if v else "n/a")
            print(f"| {name} over 2 ranks: rate | {row[0]} | {row[1]} |")


if __name__ == "__main__":
    main()

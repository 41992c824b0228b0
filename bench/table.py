#!/usr/bin/env python3
"""Prints one table from bench_kernels JSON files (Google Benchmark, --benchmark_out) and
pytorch_bench.py JSON files: workload, threads, normlab median, PyTorch median, the speedup
PyTorch time / normlab time (above 1: normlab is faster), and both rates (GFLOP/s or GB/s); then
the performance targets, each computed from the rows it needs and marked met or not, and per
thread count whether every row is at least 1.0x PyTorch, with a "not met" line for each row below.

Rounds: bench/run.sh with ROUNDS=N runs normlab and PyTorch alternately N times (A/B/A/B), so
that a shared machine's slow minutes fall on both sides. Files are paired into rounds in the
order given: the k-th normlab file and the k-th PyTorch file of a thread count are round k. With
more than one round, each time is the median over rounds, the ratio is the median of the rounds'
ratios, and the range of the rounds' ratios (min-max) is shown beside it, as is every target's.

The first lines say where it ran: CPU model, family and model number, cores, Highway target, the
STREAM rates and the FMA peak measured in the same run (per thread count); the last column gives
every GFLOP/s row's share of the FMA peak and every GB/s row's share of the STREAM triad, at its
thread count, and the GEMM targets are stated against the peak, so they hold on any host. With
--json OUT, the table, the targets and that machine description are also written to OUT.

usage: table.py [--markdown] [--json OUT] FILE.json ...   (the file kinds are told apart by their content)
"""
import json
import statistics
import sys

MACHINE = {}  # where the normlab side ran (bench_kernels' context), for the output and the JSON


def load(paths):
    """({(name, threads): {"normlab": [(seconds, rate, unit) per round], "pytorch": [...]}},
    context lines, row order)."""
    rows, context, order = {}, [], []

    def add(key, side, value):
        if key not in rows:
            order.append(key)
        rows.setdefault(key, {}).setdefault(side, []).append(value)

    for path in paths:
        with open(path) as f:
            data = json.load(f)
        if "benchmarks" in data:  # Google Benchmark
            ctx = data.get("context", {})
            threads = int(ctx.get("normlab_threads", 1))
            if not any(c.startswith("Machine") for c in context):
                caches = ", ".join(f"L{c['level']}{c['type'][0].lower() if c['type'] != 'Unified' else ''} "
                                   f"{c['size'] // 1024} KiB" for c in ctx.get("caches", []))
                context.append(f"Machine: {ctx.get('cpu_model_name', '?')} (family {ctx.get('cpu_family', '?')}, "
                               f"model {ctx.get('cpu_model', '?')}), {ctx.get('cores', ctx.get('num_cpus', '?'))} "
                               f"cores at {ctx.get('mhz_per_cpu', '?')} MHz ({caches}); normlab's Highway target "
                               f"{ctx.get('highway_target', '?')}")
                MACHINE.update({k: ctx.get(k) for k in ("cpu_model_name", "cpu_family", "cpu_model", "cores",
                                                        "highway_target", "mhz_per_cpu")})
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
                add((name, threads), "normlab", (sec, rate, unit))
        else:  # pytorch_bench.py
            ctx = data.get("context", {})
            blas = ctx.get("blas", {})
            line = f"PyTorch {ctx.get('torch', '?')}: BLAS {', '.join(blas.get('libraries', [])) or '?'}"
            if "openblas_config" in blas:
                line += f" ({blas['openblas_config']})"
            if line not in context:
                context.append(line)
            for r in data["results"]:
                unit = {"flop": "GFLOP/s", "byte": "GB/s"}.get(r["unit"])  # None: a time only
                rate = r["work"] / r["median_s"] / 1e9 if unit else None
                add((r["name"], int(r["threads"])), "pytorch", (r["median_s"], rate, unit or ""))
    return rows, context, order


def fmt_time(sec):
    if sec is None:
        return "-"
    if sec >= 1:
        return f"{sec:.3f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.3f} ms"
    return f"{sec * 1e6:.2f} us"


def per_round(a, b, f):
    """f(a[k], b[k]) for the rounds k both lists have."""
    return [f(x, y) for x, y in zip(a, b)]


def summary(values, fmt):
    """The median of `values`, with the range min-max when there are several."""
    if not values:
        return "-"
    med = fmt(statistics.median(values))
    return med if len(values) == 1 else f"{med} ({fmt(min(values))}-{fmt(max(values))})"


# The performance targets: (what, numerator row, denominator row, threshold[, "at most"]), where a
# row is (workload, threads, side, "time" or "rate") and the value of a round is numerator /
# denominator, met when at least the threshold (at most it, for a cost). Besides these, every row
# with both sides must be at least 1.0x PyTorch (target_lines).
def _vs_pytorch(what, workload, threads, x):
    return (f"{what}: >= {x:g}x PyTorch", (workload, threads, "pytorch", "time"), (workload, threads, "normlab", "time"), x)


def _of_stream(what, workload, stream, x):
    return (f"{what}, 1 thread: >= {x:.0%} of STREAM {stream.split()[1]}", (workload, 1, "normlab", "rate"),
            (stream, 1, "normlab", "rate"), x)


def _of_peak(what, workload, threads, x):
    return (f"{what}, {threads} thread{'s' if threads > 1 else ''}: >= {x:.0%} of the FMA peak",
            (workload, threads, "normlab", "rate"), (PEAK, threads, "normlab", "rate"), x)


def _scaling(what, workload, x):
    return (f"{what}: 2 threads >= {x:g}x 1 thread", (workload, 1, "normlab", "time"), (workload, 2, "normlab", "time"), x)


EW = " 4096x1024"
PEAK = "peak fma f32"  # bench/peak_bench.cc: the ceiling of the GFLOP/s rows, per thread count
# GEMM against the machine's own FMA peak (not OpenBLAS's rate, which on these hosts runs AVX2
# kernels): 90% at 1 thread for M, N, K >= 256, 75% for the training steps' small and skinny
# products (batch 16-128 linear layers), and 1.85x from 1 to 2 threads on 512x1024x1024.
TARGETS = [_of_peak(f"GEMM {n}x{n}x{n}", f"matmul {n}x{n} @ {n}x{n}", 1, 0.9) for n in (256, 512, 1024, 2048)]
TARGETS += [
    _of_peak("GEMM 512x1024x1024", "matmul 512x1024 @ 1024x1024", 1, 0.9),
    _scaling("GEMM 512x1024x1024", "matmul 512x1024 @ 1024x1024", 1.85),
]
TARGETS += [_of_peak(f"linear {shape} b128 {op}", f"linear {shape} b128 {op}", 1, 0.75)
            for shape in ("784->256", "256->256") for op in ("forward x W^T", "dX = dY W", "dW = dY^T X")]
TARGETS += [_of_peak(f"linear 784->256 b{b} forward", f"linear 784->256 b{b} forward x W^T", 1, 0.75) for b in (16, 64)]
TARGETS += [
    _of_stream("LayerNorm forward 4096x1024", "layernorm forward 4096x1024", "stream triad 2^25", 0.8),
    _vs_pytorch("LayerNorm forward 4096x1024", "layernorm forward 4096x1024", None, 1.8),
    _vs_pytorch("LayerNorm forward+backward 4096x1024", "layernorm forward+backward 4096x1024", None, 2.5),
    _vs_pytorch("BatchNorm1d forward+backward 4096x1024", "batchnorm1d forward+backward 4096x1024", None, 3.0),
    # Elementwise at the memory's rate: the same arrays moved as STREAM's triad (2 read, 1 written)
    # or copy (1 read, 1 written), and scaling over 2 threads.
    _of_stream("add" + EW, "add" + EW, "stream triad 2^25", 0.9),
    _of_stream("axpy" + EW, "axpy" + EW, "stream triad 2^25", 0.9),
    _of_stream("relu" + EW, "relu" + EW, "stream copy 2^25", 0.9),
    _scaling("add" + EW, "add" + EW, 1.6),
    _scaling("axpy" + EW, "axpy" + EW, 1.6),
    _scaling("relu" + EW, "relu" + EW, 1.6),
    _vs_pytorch("train step MLP 784-256-256-10 b128 none, 1 thread", "train step mlp 784-256-256-10 b128 none", 1, 1.5),
    _vs_pytorch("train step MLP 784-256-256-10 b128 batch, 1 thread", "train step mlp 784-256-256-10 b128 batch", 1, 1.5),
    _vs_pytorch("train step MLP 784-256-256-10 b128 layer, 1 thread", "train step mlp 784-256-256-10 b128 layer", 1, 1.5),
    _vs_pytorch("train step MLP 784-256-256-10 b16", "scaling batch 16 mlp 784-256-256-10 none", None, 2.0),
] + [_vs_pytorch(f"train step MLP 2-32-32-2 b32 {norm}", f"train step mlp 2-32-32-2 b32 {norm}", None, 15.0)
     for norm in ("none", "batch", "layer")]
# The sequence models (bench/seq_bench.cc, bench/pytorch_seq.py), at each thread count: the LSTM
# classifier's Adam step 1.5x PyTorch at batch 32 and 2x at batch 2, the causal attention's
# forward+backward 2x, the GPT's AdamW step 1.5x and its KV-cache generation 2x.
TARGETS += [_vs_pytorch(f"train step LSTM 28x28 h128 b{batch} {norm}", f"train step lstm 28x28 h128 b{batch} {norm}",
                        None, x)
            for batch, x in ((32, 1.5), (2, 2.0)) for norm in ("none", "layer", "batch")]
TARGETS += [_vs_pytorch(f"attention causal b16 h4 d32 T{t} forward+backward",
                        f"attention causal b16 h4 d32 T{t} forward+backward", None, 2.0) for t in (64, 256)]
TARGETS += [_vs_pytorch(f"train step GPT L4 C128 H4 T64 b16 {norm}", f"train step gpt L4 C128 H4 T64 b16 {norm}",
                        None, 1.5) for norm in ("none", "layer", "rms", "batch")]
TARGETS += [_vs_pytorch("generate GPT L4 C128 kv-cache 64 tokens", "generate gpt L4 C128 kv-cache 64 tokens", None, 2.0)]
# Second derivatives (bench/second_order_bench.cc): the gradient-penalty step and the Hessian-vector
# product 1.5x PyTorch at 1 thread, and BatchNorm's cost at most 1.5x no norm's (normlab's times).
_SECOND_ORDER = [(kind, model) for kind in ("penalty step", "hvp")
                 for model in ("mlp 784-256-256-10 b128", "cnn b32")]
TARGETS += [_vs_pytorch(f"{kind} {model} {norm}, 1 thread", f"{kind} {model} {norm}", 1, 1.5)
            for kind, model in _SECOND_ORDER for norm in ("none", "batch", "layer")]
TARGETS += [(f"{kind} {model}: BatchNorm <= 1.5x no norm", (f"{kind} {model} batch", 1, "normlab", "time"),
             (f"{kind} {model} none", 1, "normlab", "time"), 1.5, "at most") for kind, model in _SECOND_ORDER]


def target_lines(rows):
    """[(what, threads, summary of the rounds' values, "met"/"not met", rounds met, rounds)] for every
    target whose rows are present; a target without a fixed thread count is checked at each count.
    Then, per thread count, "every row >= 1.0x PyTorch" and a "not met" line for each row below it."""
    out = []
    thread_counts = sorted({t for _, t in rows})
    for what, num, den, threshold, *at_most in TARGETS:
        meets = (lambda v: v <= threshold) if at_most else (lambda v: v >= threshold)
        fixed = num[1] is not None or den[1] is not None
        for t in [None] if fixed else thread_counts:
            def series(row):
                name, threads, side, kind = row
                vals = rows.get((name, threads if fixed else t), {}).get(side, [])
                return [v[0] if kind == "time" else v[1] for v in vals]

            values = [x / y for x, y in zip(series(num), series(den)) if x is not None and y]
            if not values:
                continue
            met = sum(meets(v) for v in values)
            verdict = "met" if meets(statistics.median(values)) else "not met"
            out.append((what, "-" if fixed else str(t), summary(values, lambda v: f"{v:.2f}x"), verdict, met,
                        len(values)))
    for t in thread_counts:
        below, total = [], 0
        for (name, threads), r in rows.items():
            if threads != t or not r.get("normlab") or not r.get("pytorch"):
                continue
            values = per_round(r["pytorch"], r["normlab"], lambda a, b: a[0] / b[0])
            if not values:
                continue
            total += 1
            if statistics.median(values) < 1.0:
                below.append((f"{name}: >= 1x PyTorch", str(t), summary(values, lambda v: f"{v:.2f}x"), "not met",
                              sum(v >= 1.0 for v in values), len(values)))
        if total:
            out.append(("every row: >= 1x PyTorch", str(t), f"{total - len(below)}/{total} rows",
                        "met" if not below else "not met", total - len(below), total))
            out.extend(sorted(below))
    return out


def print_table(header, table, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for row in table:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(h), *(len(row[i]) for row in table)) if table else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in table:
        print("  ".join((c.ljust(w) if i == 0 else c.rjust(w)) for i, (c, w) in enumerate(zip(row, widths))))


def main(argv):
    markdown = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    json_out = None
    if "--json" in argv:
        i = argv.index("--json")
        if i + 1 >= len(argv):
            print("table.py: --json needs a file name", file=sys.stderr)
            return 2
        json_out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    paths = argv
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    rows, context, order = load(paths)
    # The ceilings of this run beside the machine line: the STREAM rates and the FMA peak.
    stream, peak = {}, {}
    for (name, threads), r in rows.items():
        if r.get("normlab") and r["normlab"][0][1] is not None:
            if name.startswith("stream "):
                stream.setdefault(name, {})[threads] = statistics.median(v[1] for v in r["normlab"])
            elif name == PEAK:
                peak[threads] = statistics.median(v[1] for v in r["normlab"])
    pos = next((i + 1 for i, c in enumerate(context) if c.startswith("Machine")), 0)
    if peak:
        MACHINE["fma_peak_gflop_per_s"] = peak
        context.insert(pos, "FMA peak (this run, float32, 12 independent FMA chains per thread at normlab's Highway "
                            "target): " + ", ".join(f"{v:.1f} GFLOP/s at {t} thread{'s' if t > 1 else ''}"
                                                    for t, v in sorted(peak.items())))
    if stream:
        MACHINE["stream_gb_per_s"] = stream
        line = "STREAM (this run, GB/s): " + "; ".join(
            f"{name} " + ", ".join(f"{v:.1f} at {t} thread{'s' if t > 1 else ''}" for t, v in sorted(by_t.items()))
            for name, by_t in sorted(stream.items()))
        context.insert(pos, line)
    triad = stream.get("stream triad 2^25", {})
    rounds = max(len(v) for r in rows.values() for v in r.values()) if rows else 0
    # Group by workload (in first-seen order), then by thread count.
    names = []
    for name, _ in order:
        if name not in names:
            names.append(name)
    header = ["workload", "threads", "normlab", "PyTorch", "PyTorch/normlab", "normlab rate", "PyTorch rate",
              "of ceiling"]
    table = []
    for name in names:
        for threads in sorted(t for n, t in rows if n == name):
            r = rows[(name, threads)]
            n, p = r.get("normlab", []), r.get("pytorch", [])
            med = lambda vals, i: statistics.median(v[i] for v in vals) if vals and vals[0][i] is not None else None
            ratio = summary(per_round(p, n, lambda a, b: a[0] / b[0]), lambda v: f"{v:.2f}x")
            rate = lambda vals: f"{med(vals, 1):.1f} {vals[0][2]}" if med(vals, 1) is not None else "-"
            # normlab's rate as a share of this thread count's ceiling: the FMA peak for GFLOP/s, the
            # STREAM triad for GB/s (the ceilings themselves and rows without a rate: "-").
            ceiling = {"GFLOP/s": peak, "GB/s": triad}.get(n[0][2] if n else "", {}).get(threads)
            share = (f"{med(n, 1) / ceiling:.0%}" if ceiling and med(n, 1) is not None and name != PEAK
                     and not name.startswith("stream ") else "-")
            table.append([name, str(threads), fmt_time(med(n, 0)), fmt_time(med(p, 0)), ratio, rate(n), rate(p), share])
    for line in context:
        print(line)
    if rounds > 1:
        print(f"{rounds} rounds of normlab then PyTorch: medians over the rounds (each round's value a median "
              "over repetitions); the ratio is the median of the rounds' ratios (min-max)")
    else:
        print("medians over repetitions")
    print("PyTorch/normlab > 1 means normlab is faster")
    print_table(header, table, markdown)
    targets = target_lines(rows)
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"machine": MACHINE, "context": context, "header": header, "rows": table,
                       "targets": [dict(zip(["target", "threads", "value", "verdict", "rounds_met", "rounds"], t))
                                   for t in targets]}, f, indent=1)
    if targets:
        print()
        print("performance targets (value = the ratio the target names" + (", median (min-max) over rounds)" if rounds > 1 else ")"))
        print_table(["target", "threads", "value", "verdict", "rounds met"],
                    [[w, t, v, verdict, f"{m}/{k}"] for w, t, v, verdict, m, k in targets], markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Tables of the sweep protocol (bench/protocol.sh): wall time per batch size, normlab beside
PyTorch, with the share of it spent in training steps, and the final accuracies of both.

usage: protocol.py [--markdown] [--ci] NORMLAB_SWEEP_DIR [PYTORCH_JSON ...]
NORMLAB_SWEEP_DIR is the folder `normlab sweep` wrote (manifest.json with run_timing, runs.csv);
PYTORCH_JSON is what bench/pytorch_protocol.py (or, for a character GPT sweep, whose runs.csv has
val_bits_per_char, bench/pytorch_lm_protocol.py) wrote with --out; several
files (processes that split the runs) are merged, their wall times summed. --ci: the cells are mean ± the
half-width of the 95% confidence interval of the mean over seeds (Student's t, as normlab's
summary), else mean ± sample std. A GPT sweep's tables are its final validation bits per character
(and BatchNorm's in training mode) with the total wall times; normlab records no per-run times there.
"""
import csv
import json
import math
import os
import statistics
import sys


def load_normlab(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        man = json.load(f)
    if "run_timing" not in man:
        sys.exit(f"protocol.py: {folder}/manifest.json has no run_timing (a normlab built before the timing was added?)")
    runs = {}
    for t in man["run_timing"]:
        runs[(t["norm"], t["batch_size"], t["seed"])] = dict(t)
    with open(os.path.join(folder, "runs.csv")) as f:
        for row in csv.DictReader(f):
            key = (row["norm"], int(row["batch_size"]), int(row["seed"]))
            for k in ("final_test_acc", "final_test_acc_precise", "final_test_acc_batch"):
                runs[key][k] = float(row[k])
            runs[key]["diverged"] = row["diverged"] == "1"
    return man["wall_seconds"], runs


def load_normlab_lm(folder):
    """The final evaluation (every validation window) of each run of a GPT sweep."""
    with open(os.path.join(folder, "manifest.json")) as f:
        wall = json.load(f)["wall_seconds"]
    runs = {}
    with open(os.path.join(folder, "runs.csv")) as f:
        for row in csv.DictReader(f):
            if row["all_windows"] != "1":
                continue
            num = lambda k: float(row[k]) if row[k] not in ("", "nan") else float("nan")
            runs[(row["norm"], int(row["batch_size"]), int(row["seed"]))] = {
                "val_bits_per_char": num("val_bits_per_char"),
                "val_bits_per_char_train_mode": num("val_bits_per_char_train_mode"),
                "steps": int(row["steps_planned"]), "diverged": row["diverged"] == "1"}
    return wall, runs


def load_pytorch(paths):
    """The runs of one or more PyTorch run files (processes that split the runs), and their summed wall time."""
    wall, runs = 0.0, {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        wall += data["wall_seconds"]
        for r in data["runs"]:
            key = (r["norm"], r["batch_size"], r["seed"])
            if key in runs:
                sys.exit(f"protocol.py: run {key} is in two PyTorch files (the second is {path})")
            runs[key] = r
    return wall, runs


def whole_sweep(nl_wall, pt_wall, pt_files):
    """The line of both sides' sweep times; PyTorch's summed over its files when it ran as several processes."""
    line = f"\nWhole sweep: normlab {nl_wall:.1f} s"
    if pt_wall is None:
        return line
    if pt_files > 1:
        return line + f", PyTorch {pt_wall:.1f} s summed over its {pt_files} processes (not comparable)"
    return line + f", PyTorch {pt_wall:.1f} s ({pt_wall / nl_wall:.2f}x)"


def table(header, rows, markdown):
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        fmt = lambda r: "  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths)))
        out = [fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
    return "\n".join(out)


# Student's t quantile t(0.975, df) for df = 1..30 (above: the normal's 1.96 is within 2%).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
CI = False  # --ci: the 95% CI half-width instead of the std


def spread(v):
    if len(v) < 2:
        return 0.0
    s = statistics.stdev(v)
    return s * (T975[len(v) - 2] if len(v) - 1 <= len(T975) else 1.96) / math.sqrt(len(v)) if CI else s


def cell(values, scale, digits):
    v = [x for x in values if isinstance(x, float) and math.isfinite(x)]
    if not v:
        return "diverged" if values else "-"
    return f"{scale * statistics.mean(v):.{digits}f} ± {scale * spread(v):.{digits}f}"


def t_cdf(t, df):
    """Student's t distribution function, by Simpson's rule on its density from 0 to |t|."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    pdf = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)
    n, x = 2000, abs(t)
    h = x / n
    area = h / 3 * (pdf(0) + pdf(x) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, n)))
    return 0.5 + math.copysign(area, t)


def t_quantile(q, df):
    lo, hi = 0.0, 1000.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < q else (lo, mid)
    return (lo + hi) / 2


def welch(a, b):
    """mean(b) - mean(a), its 95% interval (Welch's t, Welch-Satterthwaite degrees of freedom) and
    the two-sided p-value; None when a side has fewer than 2 finite values."""
    a, b = ([x for x in v if isinstance(x, float) and math.isfinite(x)] for v in (a, b))
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    d, se = statistics.mean(b) - statistics.mean(a), math.sqrt(va + vb)
    if se == 0:
        return d, d, d, 1.0 if d == 0 else 0.0
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    h = t_quantile(0.975, df) * se
    return d, d - h, d + h, 2 * (1 - t_cdf(abs(d / se), df))


def differences(nl, pt, cols, batches, scale, digits, what, markdown):
    """PyTorch minus normlab per norm and batch size with Welch's 95% interval, and how many differ."""
    rows, differ, n = [], [], 0
    for name, f in cols:
        for b in batches:
            w = welch([r.get(f, float("nan")) for k, r in nl.items() if k[:2] == (name, b)],
                      [r.get(f, float("nan")) for k, r in pt.items() if k[:2] == (name, b)])
            if w is None:
                continue
            d, lo, hi, p = w[0] * scale, w[1] * scale, w[2] * scale, w[3]
            n += 1
            verdict = "not distinguishable" if lo <= 0 <= hi else "distinguishable"
            label = name + (" train mode" if f.endswith("train_mode") else "")
            if verdict == "distinguishable":
                differ.append(f"{label} at batch {b}")
            rows.append([label, str(b), f"{d:+.{digits}f}", f"[{lo:+.{digits}f}, {hi:+.{digits}f}]", f"{p:.2f}",
                         verdict])
    if not rows:
        return
    print(f"\nPyTorch minus normlab, {what} (mean difference over seeds, 95% interval by Welch's t-test)\n")
    print(table(["norm", "batch", "difference", "95% interval", "p", "reading"], rows, markdown))
    print(f"\n{n - len(differ)} of {n} cells not distinguishable" +
          (f"; distinguishable: {', '.join(differ)}" if differ else ""))


def acc(values):
    return cell(values, 100, 2)


def main_lm(paths, markdown):
    nl_wall, nl = load_normlab_lm(paths[0])
    pt_wall, pt = load_pytorch(paths[1:]) if len(paths) > 1 else (None, {})
    batches = sorted({k[1] for k in nl})
    norms = list(dict.fromkeys(k[0] for k in nl))
    cols = [(n, "val_bits_per_char") for n in norms]
    cols += [(n, "val_bits_per_char_train_mode") for n in norms if n.startswith("batch")]
    what = "mean ± 95% CI half-width over seeds" if CI else "mean ± std over seeds"
    for side, runs in (("normlab", nl), ("PyTorch", pt)):
        if not runs:
            continue
        rows = []
        for b in batches:
            steps = [r["steps"] for k, r in runs.items() if k[1] == b]
            rows.append([str(b), str(steps[0]) if steps else "-"] +
                        [cell([r.get(f, float("nan")) for k, r in runs.items() if k[:2] == (n, b)], 1, 3)
                         for n, f in cols])
        print(f"\nFinal validation bits per character, {side} (every validation window, eval mode; "
              f"train mode: each batch with its own statistics; {what})\n")
        print(table(["batch", "steps"] + [n + (" train mode" if f.endswith("train_mode") else "") for n, f in cols],
                    rows, markdown))
    differences(nl, pt, cols, batches, 1, 3, "validation bits per character", markdown)
    print(whole_sweep(nl_wall, pt_wall if pt else None, len(paths) - 1))


def main(argv):
    global CI
    markdown, CI = "--markdown" in argv, "--ci" in argv
    paths = [a for a in argv if a not in ("--markdown", "--ci")]
    if not paths:
        sys.exit(__doc__)
    with open(os.path.join(paths[0], "runs.csv")) as f:
        if "val_bits_per_char" in next(csv.reader(f)):
            return main_lm(paths, markdown)
    nl_wall, nl = load_normlab(paths[0])
    pt_wall, pt = load_pytorch(paths[1:]) if len(paths) > 1 else (None, {})
    batches = sorted({k[1] for k in nl})
    norms = [n for n in ("none", "batch", "batch-shared", "layer", "group", "rms", "instance") if any(k[0] == n for k in nl)]

    # Wall time per batch size (summed over norms and seeds).
    def sums(runs):
        g = lambda k: sum(r.get(k, float("nan")) for r in runs)
        return g("seconds"), g("cpu_seconds"), g("step_seconds"), g("eval_seconds") + g("bn_eval_seconds")

    rows = []
    groups = [(str(b), [k for k in nl if k[1] == b]) for b in batches] + [("all", list(nl))]
    for label, keys in groups:
        ns, nc, nst, ne = sums([nl[k] for k in keys])
        row = [label, str(len(keys)), f"{ns:.1f}", f"{nc:.1f}", f"{100 * nst / ns:.0f}%", f"{ne:.1f}"]
        p = [pt[k] for k in keys if k in pt]
        if pt:
            if p:
                ps, pc, pst, pe = sums(p)
                row += [f"{ps:.1f}", f"{pc:.1f}", f"{100 * pst / ps:.0f}%", f"{ps / ns:.2f}x"]
            else:
                row += ["-"] * 4
        rows.append(row)
    header = ["batch", "runs", "normlab s", "normlab CPU s", "steps share", "eval s"]
    if pt:
        header += ["PyTorch s", "PyTorch CPU s", "steps share", "PyTorch/normlab"]
    print("Wall time per batch size (sum over norms and seeds; CPU = processor time; steps = forward, loss,"
          " backward, update;\neval = test evaluation + BatchNorm precise/test-batch evaluation)\n")
    print(table(header, rows, markdown))
    print(whole_sweep(nl_wall, pt_wall if pt else None, len(paths) - 1))

    # Wall time per norm and batch size (mean over seeds).
    rows = []
    for norm in norms:
        for b in batches:
            n = [r for k, r in nl.items() if k[:2] == (norm, b)]
            p = [r for k, r in pt.items() if k[:2] == (norm, b)]
            ns = statistics.mean(r["seconds"] for r in n)
            nst = statistics.mean(r["step_seconds"] for r in n)
            steps = n[0]["steps"]
            cpu = lambda runs: statistics.mean(r.get("cpu_seconds", float("nan")) for r in runs)
            row = [norm, str(b), f"{ns:.2f}", f"{cpu(n):.2f}", f"{100 * nst / ns:.0f}%", f"{1e6 * nst / steps:.1f}"]
            if p:
                ps = statistics.mean(r["seconds"] for r in p)
                pst = statistics.mean(r["step_seconds"] for r in p)
                row += [f"{ps:.2f}", f"{cpu(p):.2f}", f"{1e6 * pst / steps:.1f}", f"{ps / ns:.2f}x"]
            rows.append(row)
    header = ["norm", "batch", "normlab s/run", "normlab CPU s/run", "steps share", "normlab us/step"]
    if pt:
        header += ["PyTorch s/run", "PyTorch CPU s/run", "PyTorch us/step", "PyTorch/normlab"]
    print("\nPer run (mean over seeds; wall time, processor time; us/step = step wall time / number of steps)\n")
    print(table(header, rows, markdown))

    # Final accuracy (median of the last 3 epochs), mean ± std over seeds, in %.
    cols = [(n, "final_test_acc") for n in norms]
    for bn in ("batch", "batch-shared"):
        if bn in norms:
            cols += [(bn, "final_test_acc_precise"), (bn, "final_test_acc_batch")]
    names = {"final_test_acc": "", "final_test_acc_precise": " precise", "final_test_acc_batch": " test-batch"}
    for side, runs in (("normlab", nl), ("PyTorch", pt)):
        if not runs:
            continue
        rows = []
        for b in batches:
            rows.append([str(b)] + [acc([r.get(f, float("nan")) for k, r in runs.items() if k[:2] == (n, b)])
                                    for n, f in cols])
        final = "the last epoch's" if CI else "median of the last 3 epochs"
        what = "mean ± 95% CI half-width over seeds" if CI else "mean ± std over seeds"
        print(f"\nFinal test accuracy, {side} ({final}; {what}, %)\n")
        print(table(["batch"] + [n + names[f] for n, f in cols], rows, markdown))
    differences(nl, pt, [(n, "final_test_acc") for n in norms], batches, 100, 2, "final test accuracy (points)",
                markdown)


if __name__ == "__main__":
    main(sys.argv[1:])

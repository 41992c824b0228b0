#!/usr/bin/python3
"""PyTorch against normlab on the landscape probes' MLP protocol, cell by cell.

  why_compare.py NORMLAB_OUT PYTORCH_JSON

NORMLAB_OUT: the folder of `normlab compare ... --probe-every --curvature-samples` (its runs.csv,
shifts.csv, landscape.csv, curvature.csv); PYTORCH_JSON: bench/pytorch_why.py --out. Every seed's
value is recomputed from normlab's per-run CSVs as why.csv has it (a run's mean over its probes;
ICS over the layers after the first; |top eigenvalue|), then per norm and measure: both means, the
difference PyTorch - normlab with its 95% Welch interval and p (two-sided; the t distribution
integrated numerically), and whether the two are distinguishable at 95%.
"""
import csv
import json
import math
import statistics
import sys
from collections import defaultdict

KEYS = ["final_score", "ics", "ics_relative", "cosine", "loss_variation", "grad_predictiveness", "beta_smoothness",
        "eigenvalue_end", "trace_end"]


def t_sf(t, df, steps=20000):
    """P(T > t) for Student's t with df degrees of freedom (t >= 0), by Simpson's rule on [0, t]."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)
    h = t / steps
    s = f(0) + f(t) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, steps))
    return 0.5 - s * h / 3


def t_quantile(df, q=0.975):
    lo, hi = 0.0, 100.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if 1 - t_sf(mid, df, 2000) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def welch(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    t = (ma - mb) / se
    half = t_quantile(df) * se
    return ma - mb, ma - mb - half, ma - mb + half, 2 * t_sf(abs(t), df)


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def normlab_values(out):
    v = defaultdict(lambda: defaultdict(list))  # norm -> key -> per-seed values (seed order)
    for r in rows(f"{out}/runs.csv"):
        if r["diverged"] == "0":
            v[r["norm"]]["final_score"].append(float(r["final_test_acc"]))
    shifts = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in rows(f"{out}/shifts.csv"):
        if r["layer"] != "0":
            shifts[(r["norm"], r["seed"])][r["step"]]["ics"].append(float(r["ics"]))
            shifts[(r["norm"], r["seed"])][r["step"]]["ics_relative"].append(float(r["ics_relative"]))
            shifts[(r["norm"], r["seed"])][r["step"]]["cosine"].append(float(r["cosine"]))
    for (norm, _), steps in sorted(shifts.items()):
        for k in ("ics", "ics_relative", "cosine"):
            v[norm][k].append(statistics.fmean(statistics.fmean(s[k]) for s in steps.values()))
    land = defaultdict(dict)
    for r in rows(f"{out}/landscape.csv"):
        land[(r["norm"], r["seed"])][r["step"]] = r
    for (norm, _), steps in sorted(land.items()):
        for k in ("loss_variation", "grad_predictiveness", "beta_smoothness"):
            v[norm][k].append(statistics.fmean(float(s[k]) for s in steps.values()))
    for r in rows(f"{out}/curvature.csv"):
        if r["point"] == "end":
            v[r["norm"]]["eigenvalue_end"].append(abs(float(r["top_eigenvalue"])))
            v[r["norm"]]["trace_end"].append(float(r["trace"]))
    return v


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    nl = normlab_values(sys.argv[1])
    with open(sys.argv[2]) as f:
        pt = json.load(f)["norms"]
    print("| norm | measure | normlab | PyTorch | PyTorch - normlab [95% CI] | Welch p | distinguishable |")
    print("|---|---|---|---|---|---|---|")
    same = total = 0
    for norm in pt:
        for k in KEYS:
            a, b = pt[norm][k], nl[norm][k]
            d, lo, hi, p = welch(a, b)
            total += 1
            same += p >= 0.05
            print(f"| {norm} | {k} | {statistics.fmean(b):.4g} | {statistics.fmean(a):.4g} | {d:+.3g} [{lo:+.3g}, {hi:+.3g}] "
                  f"| {p:.2g} | {'yes' if p < 0.05 else 'no'} |")
    print(f"\n{same} of {total} cells not distinguishable at 95%.")


if __name__ == "__main__":
    main()

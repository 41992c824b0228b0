#!/usr/bin/python3
"""The landscape probes' MLP protocol in PyTorch, as `normlab compare --probe-every --curvature-samples`
measures it (experiments/run/landscape.cc, landscape_probes.cc), for a cross-check of normlab's Why
tables (the means over seeds, not the same runs: the initial weights and batch order differ).

- Fashion-MNIST (Debian's dataset-fashion-mnist), the first --train-limit training images, the full
  test set; pixels / 255, standardized per pixel with the training set's mean and population std
  (pytorch_protocol.py's loader).
- MLP 784-256-256-10: Linear -> norm -> ReLU per hidden layer; norms none, batch (BatchNorm1d), layer
  (LayerNorm), noisybatch (BatchNorm1d whose output, per unit, is multiplied by s ~ U[0.5, 2) and
  shifted by m ~ U[-0.5, 1.5), drawn anew at every training step; at evaluation 1.25 BN(x) + 0.5,
  the noise's means). Plain SGD (no momentum, no weight decay), constant --lr, batch 128, a fresh
  permutation per epoch, the last partial batch dropped.
- Every --probe-every steps, on the step's batch in training mode, with the step's noise:
  ICS of layer i (Linear i and the norm after it) = ||G_i - G'_i||, G'_i the gradient after layers
  1..i-1 took the step's update -lr g; and the loss and gradient at w - eta g, eta = lr x 0.25, 0.5,
  1, 2, 4: loss variation, gradient predictiveness, beta-smoothness. The model's weights and
  BatchNorm buffers are restored after each probe.
- The curvature of the loss of the first --curvature-samples training images (training mode) before
  the first step, at a quarter, a half and after the last: the eigenvalue of largest magnitude by
  power iteration on Hessian-vector products (relative change < 1e-3, at most 100 products) and
  Hutchinson's trace (100 Rademacher vectors).

Prints per norm the mean ± 95% CI over seeds of every measure (the same summaries as normlab's
why.csv: a run's value is its mean over probes, ICS over the layers after the first) and writes them
as JSON to --out.
"""
import argparse
import json
import math
import os
import statistics
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--train-limit", type=int, default=10000)
p.add_argument("--norms", default="none,batch,noisybatch,layer")
p.add_argument("--seeds", default="0,1,2")
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--batch-size", type=int, default=128)
p.add_argument("--probe-every", type=int, default=50)
p.add_argument("--curvature-samples", type=int, default=1000)
p.add_argument("--trace-samples", type=int, default=100)
p.add_argument("--threads", type=int, default=1)
p.add_argument("--out", default="")
args = p.parse_args()
torch.set_num_threads(args.threads)

# The loader of the batch-size protocol (its own argument parser reads sys.argv: give it ours).
_argv, sys.argv = sys.argv, [sys.argv[0], "--data-dir", args.data_dir, "--train-limit", str(args.train_limit)]
import pytorch_protocol  # noqa: E402
sys.argv = _argv

MULTIPLIERS = [0.25, 0.5, 1.0, 2.0, 4.0]
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


class NoisyBatchNorm(torch.nn.BatchNorm1d):
    """BatchNorm1d times a per-unit s ~ U[0.5, 2) plus m ~ U[-0.5, 1.5), drawn by step (train mode)."""

    def __init__(self, n, seed):
        super().__init__(n)
        self.gen = torch.Generator().manual_seed(seed)
        self.s = self.m = None
        self.redraw()

    def redraw(self):
        n = self.num_features
        self.s = torch.rand(n, generator=self.gen) * 1.5 + 0.5
        self.m = torch.rand(n, generator=self.gen) * 2.0 - 0.5

    def forward(self, x):
        y = super().forward(x)
        return y * self.s + self.m if self.training else y * 1.25 + 0.5


def build(norm, seed):
    torch.manual_seed(seed)
    layers, groups = [], []  # groups: the parameters of each "layer" (Linear + its norm)
    width = 784
    for k, h in enumerate([256, 256]):
        lin = torch.nn.Linear(width, h)
        layers.append(lin)
        group = list(lin.parameters())
        if norm != "none":
            n = {"batch": lambda: torch.nn.BatchNorm1d(h), "layer": lambda: torch.nn.LayerNorm(h),
                 "noisybatch": lambda: NoisyBatchNorm(h, 1000 * seed + k)}[norm]()
            layers.append(n)
            group += list(n.parameters())
        layers.append(torch.nn.ReLU())
        groups.append(group)
        width = h
    out = torch.nn.Linear(width, 10)
    layers.append(out)
    groups.append(list(out.parameters()))
    return torch.nn.Sequential(*layers), groups


def flat(ts):
    return torch.cat([t.reshape(-1) for t in ts])


def state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def grads(model, params, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    return loss.item(), torch.autograd.grad(loss, params)


def probe(model, groups, x, y, lr):
    """ICS per layer and the landscape along -g at the current weights (restored after)."""
    saved = state(model)
    params = [q for g in groups for q in g]
    _, g = grads(model, params, x, y)
    model.load_state_dict(saved)
    by = dict(zip(params, g))
    ics = []
    for i, group in enumerate(groups):
        if i == 0:
            continue
        gi = flat([by[q] for q in group])
        with torch.no_grad():
            for before in groups[:i]:
                for q in before:
                    q -= lr * by[q]
        _, gp = grads(model, group, x, y)
        model.load_state_dict(saved)
        gp = flat(gp)
        ics.append(((gi - gp).norm().item(), ((gi - gp).norm() / gi.norm()).item(),
                    (torch.dot(gi, gp) / (gi.norm() * gp.norm())).item()))
    gflat = flat(g)
    losses, changes = [], []
    for mlt in MULTIPLIERS:
        eta = lr * mlt
        with torch.no_grad():
            for q in params:
                q -= eta * by[q]
        loss, ge = grads(model, params, x, y)
        model.load_state_dict(saved)
        losses.append(loss)
        changes.append(((gflat - flat(ge)).norm().item(), eta))
    gn = gflat.norm().item()
    return {"ics": statistics.fmean(c[0] for c in ics), "ics_relative": statistics.fmean(c[1] for c in ics),
            "cosine": statistics.fmean(c[2] for c in ics), "loss_variation": max(losses) - min(losses),
            "grad_predictiveness": max(c for c, _ in changes),
            "beta_smoothness": max(c / (eta * gn) for c, eta in changes)}


def curvature(model, params, x, y, gen):
    saved = state(model)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    g = torch.autograd.grad(loss, params, create_graph=True)

    def hvp(v):
        return torch.autograd.grad(g, params, grad_outputs=v, retain_graph=True)

    v = [torch.randn(q.shape, generator=gen) for q in params]
    norm = flat(v).norm()
    v = [t / norm for t in v]
    lam, its = None, 0
    for its in range(1, 101):
        hv = hvp(v)
        new = torch.dot(flat(hv), flat(v)).item()
        n = flat(hv).norm()
        v = [t / n for t in hv]
        if lam is not None and abs(new - lam) < 1e-3 * (abs(lam) + 1e-6):
            lam = new
            break
        lam = new
    tr = []
    for _ in range(args.trace_samples):
        z = [torch.randint(0, 2, q.shape, generator=gen).float() * 2 - 1 for q in params]
        tr.append(torch.dot(flat(hvp(z)), flat(z)).item())
    model.load_state_dict(saved)
    return abs(lam), statistics.fmean(tr)


def run(norm, seed, data):
    xtr, ytr, xte, yte = data
    model, groups = build(norm, seed)
    params = [q for g in groups for q in g]
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0)
    gen = torch.Generator().manual_seed(seed)
    cgen = torch.Generator().manual_seed(10_000 + seed)
    steps_per_epoch = len(xtr) // args.batch_size
    total = steps_per_epoch * args.epochs
    xc, yc = xtr[:args.curvature_samples], ytr[:args.curvature_samples]
    points = {0: "init", total // 4: "quarter", total // 2: "half"}
    probes, curv = [], {}
    step = 0
    model.train()
    for _ in range(args.epochs):
        perm = torch.randperm(len(xtr), generator=gen)
        for b in range(steps_per_epoch):
            idx = perm[b * args.batch_size:(b + 1) * args.batch_size]
            x, y = xtr[idx], ytr[idx]
            if step in points:
                curv[points[step]] = curvature(model, params, xc, yc, cgen)
            if step % args.probe_every == 0:
                probes.append(probe(model, groups, x, y, args.lr))
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            for mod in model:
                if isinstance(mod, NoisyBatchNorm):
                    mod.redraw()
            step += 1
    curv["end"] = curvature(model, params, xc, yc, cgen)
    model.eval()
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    r = {k: statistics.fmean(p[k] for p in probes) for k in probes[0]}
    r["final_score"] = acc
    for pt, (lam, tr) in curv.items():
        r["eigenvalue_" + pt], r["trace_" + pt] = lam, tr
    return r


def cell(v):
    m = statistics.fmean(v)
    if len(v) < 2:
        return f"{m:.4g}"
    return f"{m:.4g} ± {T975[len(v) - 1] * statistics.stdev(v) / math.sqrt(len(v)):.2g}"


def main():
    data = pytorch_protocol.load()
    out = {}
    for norm in args.norms.split(","):
        runs = []
        for seed in [int(s) for s in args.seeds.split(",")]:
            runs.append(run(norm, seed, data))
            print(f"{norm} seed {seed}: test accuracy {100 * runs[-1]['final_score']:.2f}%", file=sys.stderr, flush=True)
        out[norm] = {k: [r[k] for r in runs] for k in runs[0]}
    keys = ["final_score", "ics", "ics_relative", "cosine", "loss_variation", "grad_predictiveness",
            "beta_smoothness", "eigenvalue_end", "trace_end"]
    print("| norm | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for norm, v in out.items():
        print(f"| {norm} | " + " | ".join(cell(v[k]) for k in keys) + " |")
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump({"args": vars(args), "torch": torch.__version__, "norms": out}, f, indent=1)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()

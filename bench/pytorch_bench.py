#!/usr/bin/python3
"""Times in PyTorch the workloads bench_kernels times in normlab (same names, shapes, dtypes).

Run with Debian's /usr/bin/python3 (python3-torch 1.13). Each workload runs `--repetitions` times;
a repetition repeats it for at least `--min-time` seconds and records the mean time per call; the
median over repetitions is reported, as Google Benchmark's `median` aggregate does for normlab.
Kernel workloads write into preallocated outputs (out=), like the normlab kernels they face.
Writes JSON to --out (and a short listing to stdout) for bench/table.py.
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="intra-op threads (default: all cores)")
    p.add_argument("--filter", default=".", help="regex: run only workloads whose name matches (re.search)")
    p.add_argument("--repetitions", type=int, default=5, help="repetitions; the median is reported")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per repetition, at least")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--list", action="store_true", help="list the workload names and exit")
    a = p.parse_args()
    if a.threads < 1:
        p.error(f"--threads must be at least 1, got {a.threads}")
    if a.repetitions < 1:
        p.error(f"--repetitions must be at least 1, got {a.repetitions}")
    if a.min_time <= 0:
        p.error(f"--min-time must be positive, got {a.min_time}")
    try:
        re.compile(a.filter)
    except re.error as e:
        p.error(f"--filter is not a valid regex: {e}")
    return a


args = parse_args()
# OpenBLAS (torch's BLAS here) keeps its own thread pool: torch.set_num_threads does not size it,
# so the environment must, before the library is loaded.
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
os.environ["OMP_NUM_THREADS"] = str(args.threads)
try:
    import torch
except ImportError:
    print("PyTorch is not installed: apt-get install python3-torch "
          "(and run this script with /usr/bin/python3)", file=sys.stderr)
    sys.exit(3)
torch.set_num_threads(args.threads)
from pytorch_seq import seq_workloads  # noqa: E402  (imports torch: after the thread settings)


def blas_info():
    """The BLAS library torch has mapped, and OpenBLAS's own description and thread count."""
    a = torch.ones(64, 64)
    a @ a  # make sure the BLAS is loaded
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path).lower() and path.startswith("/"):
                libs.add(os.path.realpath(path))
    info = {"libraries": sorted(libs)}
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            info["openblas_config"] = lib.openblas_get_config().decode()
            info["openblas_threads"] = lib.openblas_get_num_threads()
        except (OSError, AttributeError):
            pass
    return info


def workloads():
    """(name, setup) pairs; setup() returns (fn, work, unit) with work in flops or bytes per call."""
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.rand(*shape, generator=g) * 2 - 1

    def matmul(m, k, n, ta=False, tb=False):
        def setup():
            a = rand(k, m).t() if ta else rand(m, k)
            b = rand(n, k).t() if tb else rand(k, n)
            c = torch.empty(m, n)
            return (lambda: torch.mm(a, b, out=c)), 2.0 * m * n * k, "flop"
        return setup

    out = []
    for n in (32, 64, 128, 256, 512, 1024, 2048):
        out.append((f"matmul {n}x{n} @ {n}x{n}", matmul(n, n, n)))
    out.append(("matmul 512x1024 @ 1024x1024", matmul(512, 1024, 1024)))
    batch = 128
    for i, o in ((784, 256), (256, 256), (256, 10)):
        l = f"linear {i}->{o} b128 "
        out.append((l + "forward x W^T", matmul(batch, i, o, tb=True)))  # (B, in) (out, in)^T
        out.append((l + "dX = dY W", matmul(batch, o, i)))  # (B, out) (out, in)
        out.append((l + "dW = dY^T X", matmul(o, batch, i, ta=True)))  # (B, out)^T (B, in)
    for b in (1, 4, 16, 64, 256, 1024):
        out.append((f"linear 784->256 b{b} forward x W^T", matmul(b, 784, 256, tb=True)))

    rows, cols = 4096, 1024
    shape = f" {rows}x{cols}"

    def elementwise(kind, r=rows):  # on (r, cols)
        numel = r * cols

        def setup():
            x, y, z = rand(r, cols), rand(r, cols), torch.empty(r, cols)
            if kind == "add":
                return (lambda: torch.add(x, y, out=z)), 12.0 * numel, "byte"
            if kind == "relu":
                return (lambda: torch.clamp(x, min=0, out=z)), 8.0 * numel, "byte"
            if kind == "exp":
                return (lambda: torch.exp(x, out=z)), 8.0 * numel, "byte"
            if kind == "tanh":
                return (lambda: torch.tanh(x, out=z)), 8.0 * numel, "byte"
            if kind == "gelu":  # the tanh form, as normlab's (F.gelu has no out=: it allocates)
                return (lambda: torch.nn.functional.gelu(x, approximate="tanh")), 8.0 * numel, "byte"
            if kind == "axpy":
                return (lambda: y.add_(x, alpha=1e-3)), 12.0 * numel, "byte"
            if kind == "sum0":
                o = torch.empty(cols)
                return (lambda: torch.sum(x, 0, out=o)), 4.0 * numel, "byte"
            o = torch.empty(r)
            return (lambda: torch.sum(x, 1, out=o)), 4.0 * numel, "byte"
        return setup

    for name, kind in (("add", "add"), ("relu", "relu"), ("exp", "exp"), ("tanh", "tanh"), ("gelu", "gelu"),
                       ("axpy", "axpy"),
                       ("sum dim0", "sum0"), ("sum dim1", "sum1")):
        out.append((name + shape, elementwise(kind)))
    for r in (64, 1024, 16384):  # relu and axpy in L2, in L3 and in no cache (kernels_bench.cc)
        for kind in ("relu", "axpy"):
            out.append((f"{kind} {r}x{cols}", elementwise(kind, r)))

    n = 1 << 25

    def stream(kind):
        def setup():
            a, b, c = torch.ones(n), torch.full((n,), 2.0), torch.full((n,), 0.5)
            if kind == "copy":
                return (lambda: a.copy_(b)), 8.0 * n, "byte"
            return (lambda: torch.add(b, c, alpha=3.0, out=a)), 12.0 * n, "byte"
        return setup

    out.append(("stream copy 2^25", stream("copy")))
    out.append(("stream triad 2^25", stream("triad")))

    def train_step(widths, batch, norm):
        """One SGD step (forward, cross-entropy, zero_grad, backward, momentum update), as train_bench.cc."""
        def setup():
            torch.manual_seed(0)
            layers = []
            for i, o in zip(widths[:-2], widths[1:-1]):
                layers.append(torch.nn.Linear(i, o))
                if norm == "batch":
                    layers.append(torch.nn.BatchNorm1d(o))
                elif norm == "layer":
                    layers.append(torch.nn.LayerNorm(o))
                layers.append(torch.nn.ReLU())
            layers.append(torch.nn.Linear(widths[-2], widths[-1]))
            model = torch.nn.Sequential(*layers).train()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x = torch.randn(batch, widths[0], generator=g)
            y = torch.randint(0, widths[-1], (batch,), generator=g)

            def step():
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()  # set_to_none=False in 1.13: grads are zeroed in place, as normlab
                loss.backward()
                opt.step()
            return step, 1.0, "step"
        return setup

    for widths, batch in (((2, 32, 32, 2), 32), ((784, 256, 256, 10), 128)):
        for norm in ("none", "batch", "layer"):
            name = f"train step mlp {'-'.join(map(str, widths))} b{batch} {norm}"
            out.append((name, train_step(widths, batch, norm)))
    out += norm_workloads(g)
    out += scaling_workloads(g)
    out += conv_workloads(g)
    out += seq_workloads(g)
    out += second_order_workloads(g)
    return out


def second_order_workloads(g):
    """As bench/second_order_bench.cc: a gradient-penalty step (loss + 0.1 ||d loss / d x||^2 via
    torch.autograd.grad(create_graph=True), backward, SGD) and a Hessian-vector product of the loss
    with respect to every parameter (grad of <grad(loss, params, create_graph=True), v>), for the MLP
    784-256-256-10 at batch 128 and the study's CNN at batch 32, no norm, BatchNorm and LayerNorm."""
    nn, F = torch.nn, torch.nn.functional

    def model_of(arch, norm):
        torch.manual_seed(0)
        if arch == "mlp":
            layers = []
            for i, o in ((784, 256), (256, 256)):
                layers.append(nn.Linear(i, o))
                if norm == "batch":
                    layers.append(nn.BatchNorm1d(o))
                elif norm == "layer":
                    layers.append(nn.LayerNorm(o))
                layers.append(nn.ReLU())
            layers.append(nn.Linear(256, 10))
            return nn.Sequential(*layers).train()

        def n2d(c, hw):
            return nn.BatchNorm2d(c) if norm == "batch" else nn.LayerNorm([c, hw, hw]) if norm == "layer" \
                else nn.Identity()
        return nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                             nn.Conv2d(1, 32, 3, padding=1), n2d(32, 28), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), n2d(64, 14), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(3136, 10)).train()

    def work(arch, batch, norm, hvp):
        def setup():
            model = model_of(arch, norm)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x0 = torch.randn(batch, 784, generator=g)
            y = torch.randint(0, 10, (batch,), generator=g)
            params = list(model.parameters())
            v = [torch.randn(p.shape, generator=g) for p in params]

            def step():
                if hvp:
                    loss = F.cross_entropy(model(x0), y)
                    first = torch.autograd.grad(loss, params, create_graph=True)
                    torch.autograd.grad(first, params, v)
                else:
                    x = x0.detach().requires_grad_(True)
                    loss = F.cross_entropy(model(x), y)
                    (gx,) = torch.autograd.grad(loss, [x], create_graph=True)
                    opt.zero_grad()
                    (loss + 0.1 * (gx * gx).sum()).backward()
                    opt.step()
            return step, 1.0, "step"
        return setup

    out = []
    for arch, label, batch in (("mlp", "mlp 784-256-256-10", 128), ("cnn", "cnn", 32)):
        for norm in ("none", "batch", "layer"):
            for hvp in (False, True):
                name = f"{'hvp' if hvp else 'penalty step'} {label} b{batch} {norm}"
                out.append((name, work(arch, batch, norm, hvp)))
    return out


def conv_workloads(g):
    """As bench/conv_bench.cc: the study CNN's second convolution (128x32x14x14 -> 64, 3x3, padding 1)
    forward, forward + backward (input, weight and bias gradients) and forward + one gradient (the
    input's, or the weight's and bias's), in GFLOP/s; one SGD step of
    the study's CNN at batch 128 and 8 under each norm (work: the step's convolution and Linear flops)."""
    F = torch.nn.functional
    fwd_flops = 2.0 * 128 * 64 * 14 * 14 * 32 * 9

    def conv(grads):  # grads: "", "all", "input" or "weight"
        backward = grads != ""
        def setup():
            x = torch.randn(128, 32, 14, 14, generator=g).requires_grad_(grads in ("all", "input"))
            w = (torch.randn(64, 32, 3, 3, generator=g) * 0.06).requires_grad_(grads in ("all", "weight"))
            b = torch.randn(64, generator=g).requires_grad_(grads in ("all", "weight"))
            dy = torch.randn(128, 64, 14, 14, generator=g)

            def step():
                if backward:
                    x.grad = w.grad = b.grad = None
                    F.conv2d(x, w, b, padding=1).backward(dy)
                else:
                    with torch.no_grad():
                        F.conv2d(x, w, b, padding=1)
            return step, (3 if grads == "all" else 2 if backward else 1) * fwd_flops, "flop"
        return setup

    def norm2d(kind, c, hw):
        if kind == "batch":
            return torch.nn.BatchNorm2d(c)
        if kind == "layer":
            return torch.nn.LayerNorm([c, hw, hw])
        if kind == "group":
            return torch.nn.GroupNorm(8, c)
        if kind == "instance":
            return torch.nn.InstanceNorm2d(c, affine=True)
        return torch.nn.Identity()

    def cnn_step(batch, kind):
        def setup():
            torch.manual_seed(0)
            nn = torch.nn
            model = nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                                  nn.Conv2d(1, 32, 3, padding=1), norm2d(kind, 32, 28), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(32, 64, 3, padding=1), norm2d(kind, 64, 14), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(3136, 10)).train()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x = torch.randn(batch, 784, generator=g)
            y = torch.randint(0, 10, (batch,), generator=g)

            def step():
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            c1, c2, fc = 2.0 * 32 * 28 * 28 * 9, 2.0 * 64 * 14 * 14 * 32 * 9, 2.0 * 3136 * 10
            return step, batch * (2 * c1 + 3 * c2 + 3 * fc), "flop"
        return setup

    out = [("conv2d forward 128x32x14x14 64 3x3", conv("")),
           ("conv2d forward+backward 128x32x14x14 64 3x3", conv("all")),
           ("conv2d forward+input grad 128x32x14x14 64 3x3", conv("input")),
           ("conv2d forward+weight grad 128x32x14x14 64 3x3", conv("weight"))]
    for batch in (128, 8):
        for kind in ("none", "batch", "layer", "group", "instance"):
            out.append((f"train step cnn b{batch} {kind}", cnn_step(batch, kind)))
    return out


def scaling_workloads(g):
    """Scaling of the training step (bench/scaling_bench.cc): MLP 784-256-256-10 at batch 1..1024 and
    784-W-W-10 at batch 128, no norm; work = the step's matrix-product flops (forward, dW, and dX
    except for the first Linear), so the rate shows where small sizes lose efficiency."""
    def step_flops(widths, batch):
        return sum((2 if i == 0 else 3) * 2.0 * batch * a * b for i, (a, b) in enumerate(zip(widths, widths[1:])))

    def setup_for(widths, batch):
        def setup():
            torch.manual_seed(0)
            layers = []
            for i, o in zip(widths[:-2], widths[1:-1]):
                layers += [torch.nn.Linear(i, o), torch.nn.ReLU()]
            layers.append(torch.nn.Linear(widths[-2], widths[-1]))
            model = torch.nn.Sequential(*layers).train()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x = torch.randn(batch, widths[0], generator=g)
            y = torch.randint(0, widths[-1], (batch,), generator=g)

            def step():
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            return step, step_flops(widths, batch), "flop"
        return setup

    out = []
    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
        w = (784, 256, 256, 10)
        out.append((f"scaling batch {b} mlp {'-'.join(map(str, w))} none", setup_for(w, b)))
    for h in (32, 64, 128, 256, 512, 1024, 2048):
        w = (784, h, h, 10)
        out.append((f"scaling width {h} mlp {'-'.join(map(str, w))} b128 none", setup_for(w, 128)))
    return out


def norm_workloads(g):
    """LayerNorm and BatchNorm1d on 4096x1024 float32 through the nn modules in training mode, as
    bench/norm_bench.cc: forward alone (x does not require grad), and forward + y.backward(g) with x
    requiring grad, x.grad reset to None before each step and the parameters' grads zeroed in place.
    Bytes: the minimal traffic (forward 8 B per element, LayerNorm backward 12, BatchNorm backward 20)."""
    rows, cols = 4096, 1024
    numel = rows * cols
    shape = f" {rows}x{cols}"

    def module(kind):
        return torch.nn.LayerNorm(cols) if kind == "layernorm" else torch.nn.BatchNorm1d(cols)

    def forward(kind):
        def setup():
            m = module(kind).train()
            x = torch.rand(rows, cols, generator=g) * 2 - 0.5
            return (lambda: m(x)), 8.0 * numel, "byte"
        return setup

    def forward_backward(kind, bwd_bytes):
        def setup():
            m = module(kind).train()
            x = (torch.rand(rows, cols, generator=g) * 2 - 0.5).requires_grad_()
            dy = torch.rand(rows, cols, generator=g) * 2 - 1
            for p in m.parameters():
                p.grad = torch.zeros_like(p)

            def step():
                x.grad = None
                for p in m.parameters():
                    p.grad.zero_()
                m(x).backward(dy)
            return step, (8.0 + bwd_bytes) * numel, "byte"
        return setup

    return [("layernorm forward" + shape, forward("layernorm")),
            ("layernorm forward+backward" + shape, forward_backward("layernorm", 12.0)),
            ("batchnorm1d train forward" + shape, forward("batchnorm1d")),
            ("batchnorm1d forward+backward" + shape, forward_backward("batchnorm1d", 20.0))]


def time_it(fn, repetitions, min_time):
    """Median over repetitions of the mean seconds per call (each repetition >= min_time)."""
    fn()  # warm up: allocations, first-touch, thread pools
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    iters = max(1, int(min_time / once))
    samples = []
    for _ in range(repetitions):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        samples.append((time.perf_counter() - t0) / iters)
    return statistics.median(samples)


def main():
    selected = [(n, s) for n, s in workloads() if re.search(args.filter, n)]
    if args.list:
        print("\n".join(n for n, _ in selected))
        return 0
    if not selected:
        print(f"pytorch_bench.py: no workload matches the filter {args.filter!r} (see --list)", file=sys.stderr)
        return 1
    blas = blas_info()
    ctx = {"torch": torch.__version__, "threads": args.threads, "blas": blas}
    libs = ", ".join(blas["libraries"]) or "none mapped"
    print(f"PyTorch {torch.__version__}, {args.threads} thread(s), BLAS: {libs}"
          + (f" ({blas['openblas_config']}, {blas['openblas_threads']} threads)" if "openblas_config" in blas else ""),
          file=sys.stderr)
    results = []
    for name, setup in selected:
        fn, work, unit = setup()
        sec = time_it(fn, args.repetitions, args.min_time)
        results.append({"name": name, "threads": args.threads, "median_s": sec, "work": work, "unit": unit})
        rate = work / sec / 1e9
        rate_text = {"flop": f"{rate:8.1f} GFLOP/s", "byte": f"{rate:8.1f} GB/s"}.get(unit, "")
        print(f"  {name:<40} {sec * 1e6:12.1f} us  {rate_text}", file=sys.stderr)
        del fn
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"context": ctx, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

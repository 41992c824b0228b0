#!/usr/bin/python3
"""PyTorch parity fixtures: writes small safetensors files into tests/fixtures/ (see its README.md).

Run with Debian's python3-torch (1.13):  /usr/bin/python3 scripts/make_fixtures.py
The test suite only reads the files; it never needs torch. The output is deterministic (fixed seeds,
one thread) given the same torch and the same BLAS kernels. F.linear's matmuls go through BLAS
(Debian's OpenBLAS 0.3.21), which picks its kernels by CPU, and the FMA and AVX-512 kernels round
differently: on this AVX-512 AMD EPYC they change 63 of linear.safetensors' 364 float32 values by
1-64 ulp (up to 4.8e-7; float64 up to 8.9e-16), all within the tests' tolerances. So this script pins
OPENBLAS_CORETYPE=Sandybridge (AVX, no FMA), which reproduces the checked-in files byte for byte here;
the other five fixtures came out the same under every kernel set tried. See tests/fixtures/README.md.

Also:  /usr/bin/python3 scripts/make_fixtures.py --check FILE
loads any safetensors file (e.g. one written by normlab) into torch tensors with the same hand-written
reader and prints them, and --check-mlp FILE loads it into torch's
nn.Sequential(Linear(4, 3), BatchNorm1d(3), ReLU(), Linear(3, 2)) with strict=True and prints its
eval-mode output on a fixed input (see tests/fixtures/README.md).
"""
import argparse
import itertools
import json
import math
import os
import struct
import sys

# The BLAS kernels that reproduce the checked-in files, set before torch loads OpenBLAS (which reads the
# variable once, at load), replacing any value in the environment (some CI images set one).
BLAS_CORETYPE = "Sandybridge"
if os.environ.get("OPENBLAS_CORETYPE", BLAS_CORETYPE) != BLAS_CORETYPE:
    print(f"note: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} replaced by {BLAS_CORETYPE}, "
          "the kernels of the checked-in fixtures", file=sys.stderr)
os.environ["OPENBLAS_CORETYPE"] = BLAS_CORETYPE

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures")

# safetensors dtype names, in the reference implementation's enum order (its writer sorts by
# descending order of this list, then by name).
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32",
               "F32", "F64", "I64", "U64"]
TO_ST = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32"}
FROM_ST = {v: k for k, v in TO_ST.items()}
DTYPES = {"f32": torch.float32, "f64": torch.float64}


def write_safetensors(path, tensors, metadata):
    """tensors: dict name -> torch.Tensor (float32/float64/int64/int32); metadata: dict str -> str."""
    assert sys.byteorder == "little"
    items = []
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        items.append((name, TO_ST[t.dtype], list(t.shape), t.numpy().tobytes()))
    items.sort(key=lambda it: (-DTYPE_ORDER.index(it[1]), it[0]))
    header = {}
    if metadata:
        header["__metadata__"] = {k: str(metadata[k]) for k in sorted(metadata)}
    offset = 0
    for name, dt, shape, data in items:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, data in items:
            f.write(data)


def read_safetensors(path):
    """The matching reader: returns (dict name -> torch.Tensor, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dt = FROM_ST[info["dtype"]]
        buf = bytearray(data[begin:end])
        t = torch.frombuffer(buf, dtype=dt) if buf else torch.empty(0, dtype=dt)
        out[name] = t.reshape(info["shape"]).clone()
    return out, metadata


class Fixture:
    """Collects the tensors and metadata of one fixture file."""

    def __init__(self, name):
        self.name, self.tensors, self.metadata = name, {}, {}

    def add(self, name, t):
        assert name not in self.tensors, name
        self.tensors[name] = t.detach().clone()

    def meta(self, key, value):
        self.metadata[key] = value

    def write(self):
        self.meta("generator", "scripts/make_fixtures.py")
        self.meta("torch_version", torch.__version__)
        path = os.path.join(OUT_DIR, self.name + ".safetensors")
        write_safetensors(path, self.tensors, self.metadata)
        print(f"{path}: {len(self.tensors)} tensors, {os.path.getsize(path)} bytes")


def grads(out, inputs, grad_output):
    """Gradients of <out, grad_output> w.r.t. the inputs that are not None."""
    live = [t for t in inputs if t is not None]
    gs = iter(torch.autograd.grad(out, live, grad_output))
    return [next(gs) if t is not None else None for t in inputs]


def leaf(t):
    return t.detach().clone().requires_grad_(True)


def add_io(fx, prefix, x, w, b, y, dy, dx, dw, db):
    """The standard fields of a forward/backward case."""
    fx.add(prefix + ".input", x)
    if w is not None:
        fx.add(prefix + ".weight", w)
        fx.add(prefix + ".grad_weight", dw)
    if b is not None:
        fx.add(prefix + ".bias", b)
        fx.add(prefix + ".grad_bias", db)
    fx.add(prefix + ".output", y)
    fx.add(prefix + ".grad_output", dy)
    fx.add(prefix + ".grad_input", dx)


# ---- LayerNorm ----------------------------------------------------------------------------------------

def make_layernorm():
    fx = Fixture("layernorm")
    torch.manual_seed(0)
    cases = [  # name, input shape, normalized_shape, affine
        ("last_dim_affine", (3, 4, 5), [5], True),
        ("last_dim_plain", (3, 4, 5), [5], False),
        ("two_dims_affine", (3, 4, 5), [4, 5], True),
        ("two_dims_plain", (3, 4, 5), [4, 5], False),
    ]
    for name, shape, ns, affine in cases:
        fx.meta(name + ".normalized_shape", json.dumps(ns))
        fx.meta(name + ".elementwise_affine", str(affine).lower())
        fx.meta(name + ".eps", "1e-05")
        x64 = torch.randn(shape, dtype=torch.float64) * 2 + 0.5
        w64 = torch.randn(ns, dtype=torch.float64) * 0.5 + 1 if affine else None
        b64 = torch.randn(ns, dtype=torch.float64) * 0.5 if affine else None
        dy64 = torch.randn(shape, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            x, dy = leaf(x64.to(dt)), dy64.to(dt)
            w = leaf(w64.to(dt)) if affine else None
            b = leaf(b64.to(dt)) if affine else None
            y = F.layer_norm(x, ns, w, b, eps=1e-5)
            dx, dw, db = grads(y, [x, w, b], dy)
            add_io(fx, f"{dn}.{name}", x, w, b, y, dy, dx, dw, db)
    # Seed 000's worked example (a LayerNorm of two rows worked out by hand): values a test can check by hand.
    fx.meta("seed000.normalized_shape", "[3]")
    fx.meta("seed000.elementwise_affine", "false")
    fx.meta("seed000.eps", "1e-05")
    for dn, dt in DTYPES.items():
        x = torch.tensor([[0.2, 0.1, 0.3], [0.5, 0.1, 0.1]], dtype=dt)
        fx.add(f"{dn}.seed000.input", x)
        fx.add(f"{dn}.seed000.output", F.layer_norm(x, [3], eps=1e-5))
    fx.write()


# ---- BatchNorm1d --------------------------------------------------------------------------------------

def make_batchnorm1d():
    fx = Fixture("batchnorm1d")
    torch.manual_seed(1)
    C = 3
    cases = [  # name, input shape, momentum, affine, track_running_stats, training steps
        ("nc_momentum", (8, C), 0.1, True, True, 3),
        ("nc_cumulative", (8, C), None, True, True, 3),
        ("ncl_momentum", (4, C, 5), 0.1, True, True, 3),
        ("ncl_cumulative", (4, C, 5), None, True, True, 3),
        ("ncl_plain", (4, C, 5), 0.1, False, True, 2),
        ("nc_untracked", (8, C), 0.1, True, False, 1),
    ]
    for name, shape, momentum, affine, track, steps in cases:
        fx.meta(name + ".num_features", str(C))
        fx.meta(name + ".eps", "1e-05")
        fx.meta(name + ".momentum", "none" if momentum is None else repr(momentum))
        fx.meta(name + ".affine", str(affine).lower())
        fx.meta(name + ".track_running_stats", str(track).lower())
        fx.meta(name + ".steps", str(steps))
        w64 = torch.randn(C, dtype=torch.float64) * 0.5 + 1
        b64 = torch.randn(C, dtype=torch.float64) * 0.5
        xs = [torch.randn(shape, dtype=torch.float64) * (1 + k) + 0.3 * k for k in range(steps)]
        dys = [torch.randn(shape, dtype=torch.float64) for _ in range(steps)]
        x_eval = torch.randn(shape, dtype=torch.float64) * 1.5
        dy_eval = torch.randn(shape, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            bn = torch.nn.BatchNorm1d(C, eps=1e-5, momentum=momentum, affine=affine,
                                      track_running_stats=track).to(dt)
            if affine:
                with torch.no_grad():
                    bn.weight.copy_(w64)
                    bn.bias.copy_(b64)
                fx.add(f"{dn}.{name}.weight", bn.weight)
                fx.add(f"{dn}.{name}.bias", bn.bias)
            params = [bn.weight, bn.bias] if affine else [None, None]
            bn.train()
            for k in range(steps):
                p = f"{dn}.{name}.step{k}"
                x = leaf(xs[k].to(dt))
                y = bn(x)
                dx, dw, db = grads(y, [x] + params, dys[k].to(dt))
                fx.add(p + ".input", x)
                fx.add(p + ".output", y)
                fx.add(p + ".grad_output", dys[k].to(dt))
                fx.add(p + ".grad_input", dx)
                if affine:
                    fx.add(p + ".grad_weight", dw)
                    fx.add(p + ".grad_bias", db)
                if track:  # the buffers after this step
                    fx.add(p + ".running_mean", bn.running_mean)
                    fx.add(p + ".running_var", bn.running_var)
                    fx.add(p + ".num_batches_tracked", bn.num_batches_tracked)  # int64 -> I64
            bn.eval()
            p = f"{dn}.{name}.eval"
            x = leaf(x_eval.to(dt))
            y = bn(x)
            dx, dw, db = grads(y, [x] + params, dy_eval.to(dt))
            fx.add(p + ".input", x)
            fx.add(p + ".output", y)
            fx.add(p + ".grad_output", dy_eval.to(dt))
            fx.add(p + ".grad_input", dx)
            if affine:
                fx.add(p + ".grad_weight", dw)
                fx.add(p + ".grad_bias", db)
    fx.write()


# ---- GroupNorm ----------------------------------------------------------------------------------------

def make_groupnorm():
    fx = Fixture("groupnorm")
    torch.manual_seed(2)
    cases = [  # name, input shape, num_groups, affine
        ("g3_ncl", (4, 6, 5), 3, True),
        ("g1_ncl", (4, 6, 5), 1, True),
        ("g2_nc", (5, 6), 2, True),
        ("g6_nchw", (2, 6, 3, 2), 6, True),
        ("g3_ncl_plain", (4, 6, 5), 3, False),
    ]
    for name, shape, groups, affine in cases:
        C = shape[1]
        fx.meta(name + ".num_groups", str(groups))
        fx.meta(name + ".num_channels", str(C))
        fx.meta(name + ".eps", "1e-05")
        fx.meta(name + ".affine", str(affine).lower())
        x64 = torch.randn(shape, dtype=torch.float64) * 2 - 0.5
        w64 = torch.randn(C, dtype=torch.float64) * 0.5 + 1
        b64 = torch.randn(C, dtype=torch.float64) * 0.5
        dy64 = torch.randn(shape, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            x, dy = leaf(x64.to(dt)), dy64.to(dt)
            w = leaf(w64.to(dt)) if affine else None
            b = leaf(b64.to(dt)) if affine else None
            y = F.group_norm(x, groups, w, b, eps=1e-5)
            dx, dw, db = grads(y, [x, w, b], dy)
            add_io(fx, f"{dn}.{name}", x, w, b, y, dy, dx, dw, db)
    fx.write()


# ---- Conv2d and pooling -------------------------------------------------------------------------------

def make_conv2d():
    fx = Fixture("conv2d")
    torch.manual_seed(7)
    cases = [  # name, input shape, out_channels, kernel, stride, padding, dilation, groups, bias
        ("k3_p1", (2, 3, 7, 6), 4, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
        ("k3_s2", (2, 3, 7, 6), 4, (3, 3), (2, 2), (0, 0), (1, 1), 1, True),
        ("k23_s21_p10_d12", (2, 2, 8, 9), 3, (2, 3), (2, 1), (1, 0), (1, 2), 1, True),
        ("k1_nobias", (3, 4, 5, 5), 6, (1, 1), (1, 1), (0, 0), (1, 1), 1, False),
        ("k3_s2_p2", (2, 3, 5, 5), 2, (3, 3), (2, 2), (2, 2), (1, 1), 1, True),
        ("groups2", (2, 4, 6, 6), 6, (3, 3), (1, 1), (1, 1), (1, 1), 2, True),
        ("depthwise", (2, 4, 6, 6), 4, (3, 3), (1, 1), (1, 1), (1, 1), 4, True),
        ("deep_k3_p1", (2, 32, 8, 8), 16, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),  # K = 288 > one K block
    ]
    for name, shape, out, k, s, p, d, g, has_bias in cases:
        for key, v in (("kernel", k), ("stride", s), ("padding", p), ("dilation", d)):
            fx.meta(f"{name}.{key}", f"[{v[0]}, {v[1]}]")
        fx.meta(name + ".groups", str(g))
        fx.meta(name + ".bias", str(has_bias).lower())
        x64 = torch.randn(shape, dtype=torch.float64)
        w64 = torch.randn(out, shape[1] // g, *k, dtype=torch.float64) * 0.5
        b64 = torch.randn(out, dtype=torch.float64) * 0.5
        y_shape = F.conv2d(x64, w64, None, s, p, d, g).shape
        dy64 = torch.randn(y_shape, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            x, w, dy = leaf(x64.to(dt)), leaf(w64.to(dt)), dy64.to(dt)
            b = leaf(b64.to(dt)) if has_bias else None
            y = F.conv2d(x, w, b, s, p, d, g)
            dx, dw, db = grads(y, [x, w, b], dy)
            add_io(fx, f"{dn}.{name}", x, w, b, y, dy, dx, dw, db)
    fx.write()


def make_pool2d():
    fx = Fixture("pool2d")
    torch.manual_seed(8)
    cases = [  # name, op, input shape, options; "ties" inputs are small integers (many equal values)
        ("max_k2", "max", (2, 3, 7, 6), dict(kernel_size=2)),
        ("max_k3_s2_p1", "max", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
        ("max_k3_s1_p1_d2", "max", (2, 2, 7, 8), dict(kernel_size=3, stride=1, padding=1, dilation=2)),
        ("max_k23_s12", "max", (2, 2, 6, 7), dict(kernel_size=(2, 3), stride=(1, 2))),
        ("max_ties", "max", (2, 2, 6, 6), dict(kernel_size=3, stride=1, padding=1)),
        ("avg_k2", "avg", (2, 3, 7, 6), dict(kernel_size=2)),
        ("avg_k3_s2_p1", "avg", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
        ("avg_k3_s2_p1_nopad", "avg", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
        ("adaptive_1x1", "adaptive", (2, 3, 7, 6), dict(output_size=(1, 1))),
        ("adaptive_3x4", "adaptive", (2, 3, 7, 6), dict(output_size=(3, 4))),
    ]
    for name, op, shape, opts in cases:
        for key, v in opts.items():
            fx.meta(f"{name}.{key}", json.dumps(list(v) if isinstance(v, tuple) else v))
        if name.endswith("ties"):
            x64 = torch.randint(0, 3, shape).to(torch.float64)
        else:
            x64 = torch.randn(shape, dtype=torch.float64)
        fn = {"max": F.max_pool2d, "avg": F.avg_pool2d, "adaptive": F.adaptive_avg_pool2d}[op]
        dy64 = torch.randn(fn(x64, **opts).shape, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            x, dy = leaf(x64.to(dt)), dy64.to(dt)
            y = fn(x, **opts)
            (dx,) = grads(y, [x], dy)
            add_io(fx, f"{dn}.{name}", x, None, None, y, dy, dx, None, None)
    fx.write()


def make_norms2d():
    """Norm modules on image batches (N, C, H, W): training steps, then eval."""
    fx = Fixture("norms2d")
    torch.manual_seed(9)
    C, shape = 3, (4, 3, 5, 4)
    nn = torch.nn
    cases = [  # name, module factory, training steps
        ("bn2d", lambda: nn.BatchNorm2d(C), 2),
        ("in2d_default", lambda: nn.InstanceNorm2d(C), 1),
        ("in2d_affine", lambda: nn.InstanceNorm2d(C, affine=True), 1),
        ("in2d_tracked", lambda: nn.InstanceNorm2d(C, affine=True, track_running_stats=True, momentum=0.2), 2),
        ("ln_chw", lambda: nn.LayerNorm([C, 5, 4]), 1),
        ("gn2_chw", lambda: nn.GroupNorm(1, C), 1),
    ]
    for name, make, steps in cases:
        xs = [torch.randn(shape, dtype=torch.float64) * (1 + k) + 0.3 * k for k in range(steps + 1)]
        dys = [torch.randn(shape, dtype=torch.float64) for _ in range(steps + 1)]
        for dn, dt in DTYPES.items():
            m = make().to(dt)
            fx.meta(name + ".module", repr(m))
            fx.meta(name + ".steps", str(steps))
            params = [m.weight, m.bias] if getattr(m, "weight", None) is not None else [None, None]
            if params[0] is not None:
                with torch.no_grad():  # not the default ones and zeros, so that the affine part is tested
                    m.weight.copy_(torch.randn(m.weight.shape, dtype=torch.float64) * 0.5 + 1)
                    m.bias.copy_(torch.randn(m.bias.shape, dtype=torch.float64) * 0.5)
                fx.add(f"{dn}.{name}.weight", m.weight)
                fx.add(f"{dn}.{name}.bias", m.bias)
            for k in range(steps + 1):
                m.train(k < steps)
                p = f"{dn}.{name}." + (f"step{k}" if k < steps else "eval")
                x = leaf(xs[k].to(dt))
                y = m(x)
                dx, dw, db = grads(y, [x] + params, dys[k].to(dt))
                add_io(fx, p, x, None, None, y, dys[k].to(dt), dx, None, None)
                if params[0] is not None:
                    fx.add(p + ".grad_weight", dw)
                    fx.add(p + ".grad_bias", db)
                if getattr(m, "running_mean", None) is not None:  # the buffers after this step
                    fx.add(p + ".running_mean", m.running_mean)
                    fx.add(p + ".running_var", m.running_var)
    fx.write()


def make_cnn_steps():
    """The study's CNN under each norm, 5 SGD steps on one fixed batch, as
    tests/experiments/cnn_steps_test.cc: the float64 run (the reference values), and how far
    PyTorch's own float32 run lands from it (the float32 tolerance)."""
    fx = Fixture("cnn_steps")
    nn = torch.nn
    torch.manual_seed(11)
    x = torch.randn(8, 784)
    y = torch.randint(0, 10, (8,))
    fx.add("input", x)
    fx.add("target", y)
    fx.meta("lr", "0.002")  # 0.01 and up overshoot on 8 images
    fx.meta("momentum", "0.9")
    fx.meta("steps", "5")

    def norm2d(kind, c, hw):
        return {"batch": lambda: nn.BatchNorm2d(c), "layer": lambda: nn.LayerNorm([c, hw, hw]),
                "group": lambda: nn.GroupNorm(8, c), "instance": lambda: nn.InstanceNorm2d(c, affine=True)}[kind]()

    def run(kind, dt):
        torch.manual_seed(12)  # the same convolution and Linear weights under every norm
        conv1, conv2, fc = nn.Conv2d(1, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1), nn.Linear(3136, 10)
        layers = [nn.Unflatten(1, (1, 28, 28)), conv1]
        layers += ([] if kind == "none" else [norm2d(kind, 32, 28)]) + [nn.ReLU(), nn.MaxPool2d(2), conv2]
        layers += ([] if kind == "none" else [norm2d(kind, 64, 14)]) + [nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), fc]
        model = nn.Sequential(*layers)
        roles = {"conv1": conv1, "conv2": conv2, "fc": fc}
        init = {f"init.{r}.{p}": getattr(m, p).detach().clone() for r, m in roles.items() for p in ("weight", "bias")}
        model = model.to(dt).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.002, momentum=0.9)
        losses = []
        for _ in range(5):
            loss = F.cross_entropy(model(x.to(dt)), y)
            losses.append(loss.item())
            opt.zero_grad()
            loss.backward()
            opt.step()
        final = {k: v for k, v in model.state_dict().items() if v.dtype.is_floating_point}
        return repr(model), init, losses, final

    for kind in ("none", "batch", "layer", "group", "instance"):
        text, init, l64, f64 = run(kind, torch.float64)
        _, _, l32, f32 = run(kind, torch.float32)
        fx.meta(kind + ".module", text)
        if kind == "none":  # the initial weights (float32), shared by every norm
            for k, v in init.items():
                fx.add(k, v)
        fx.add(f"{kind}.losses", torch.tensor(l64, dtype=torch.float64))
        fx.meta(f"{kind}.losses.float32_deviation", repr(max(abs(a - b) for a, b in zip(l32, l64))))
        for name, t in f64.items():  # the final parameters and buffers, by PyTorch name
            fx.add(f"{kind}.final.{name}", t)
            fx.meta(f"{kind}.final.{name}.float32_deviation", repr((f32[name].double() - t).abs().max().item()))
    fx.write()


# ---- Linear -------------------------------------------------------------------------------------------

def make_linear():
    fx = Fixture("linear")
    torch.manual_seed(3)
    cases = [  # name, input shape, out_features, bias
        ("bias", (5, 4), 3, True),
        ("nobias", (5, 4), 3, False),
        ("batched", (2, 5, 4), 3, True),
    ]
    for name, shape, out, has_bias in cases:
        fx.meta(name + ".in_features", str(shape[-1]))
        fx.meta(name + ".out_features", str(out))
        fx.meta(name + ".bias", str(has_bias).lower())
        x64 = torch.randn(shape, dtype=torch.float64)
        w64 = torch.randn(out, shape[-1], dtype=torch.float64) * 0.5
        b64 = torch.randn(out, dtype=torch.float64) * 0.5
        dy64 = torch.randn(shape[:-1] + (out,), dtype=torch.float64)
        for dn, dt in DTYPES.items():
            x, w, dy = leaf(x64.to(dt)), leaf(w64.to(dt)), dy64.to(dt)
            b = leaf(b64.to(dt)) if has_bias else None
            y = F.linear(x, w, b)
            dx, dw, db = grads(y, [x, w, b], dy)
            add_io(fx, f"{dn}.{name}", x, w, b, y, dy, dx, dw, db)
    fx.write()


# ---- Losses -------------------------------------------------------------------------------------------

def make_losses():
    fx = Fixture("losses")
    torch.manual_seed(4)
    # cross_entropy (mean over the batch) with int64 class targets; the second case has large logits.
    ce_cases = [("cross_entropy", 1.0, 0.0), ("cross_entropy_large", 30.0, 100.0)]
    for name, scale, shift in ce_cases:
        logits64 = torch.randn(6, 5, dtype=torch.float64) * scale + shift
        target = torch.randint(0, 5, (6,), dtype=torch.int64)
        for dn, dt in DTYPES.items():
            x = leaf(logits64.to(dt))
            loss = F.cross_entropy(x, target)
            (dx,) = torch.autograd.grad(loss, [x])
            p = f"{dn}.{name}"
            fx.add(p + ".input", x)
            fx.add(p + ".target", target)  # I64
            fx.add(p + ".loss", loss)
            fx.add(p + ".grad_input", dx)
    x64 = torch.randn(4, 3, dtype=torch.float64)
    t64 = torch.randn(4, 3, dtype=torch.float64)
    for dn, dt in DTYPES.items():
        x, t = leaf(x64.to(dt)), leaf(t64.to(dt))
        loss = F.mse_loss(x, t)
        dx, dt_ = torch.autograd.grad(loss, [x, t])
        p = f"{dn}.mse"
        fx.add(p + ".input", x)
        fx.add(p + ".target", t)
        fx.add(p + ".loss", loss)
        fx.add(p + ".grad_input", dx)
        fx.add(p + ".grad_target", dt_)
    fx.meta("reduction", "mean")
    fx.write()


# ---- SGD ----------------------------------------------------------------------------------------------

SGD_LR, SGD_MOMENTUM, SGD_DAMPENING, SGD_WEIGHT_DECAY, SGD_STEPS = 0.1, 0.9, 0.1, 0.01, 5


def sgd_case_name(m, d, n, w, x):
    """Flags as 0/1: momentum 0 or 0.9, dampening 0 or 0.1, nesterov, weight_decay 0 or 0.01, maximize."""
    return f"m{m}d{d}n{n}w{w}x{x}"


def make_sgd():
    fx = Fixture("sgd")
    torch.manual_seed(5)
    p064 = torch.randn(2, 3, dtype=torch.float64)
    g64 = [torch.randn(2, 3, dtype=torch.float64) for _ in range(SGD_STEPS)]
    valid, invalid = [], []
    for m, d, n, w, x in itertools.product([0, 1], repeat=5):
        name = sgd_case_name(m, d, n, w, x)
        # torch: "Nesterov momentum requires a momentum and zero dampening"
        (valid if not n or (m and not d) else invalid).append(name)
    for dn, dt in DTYPES.items():
        fx.add(f"{dn}.param0", p064.to(dt))
        for k in range(SGD_STEPS):
            fx.add(f"{dn}.grad{k + 1}", g64[k].to(dt))
        for name in valid:
            m, d, n, w, x = (int(c) for c in name[1::2])
            p = torch.nn.Parameter(p064.to(dt).clone())
            opt = torch.optim.SGD([p], lr=SGD_LR, momentum=SGD_MOMENTUM * m, dampening=SGD_DAMPENING * d,
                                  nesterov=bool(n), weight_decay=SGD_WEIGHT_DECAY * w, maximize=bool(x))
            for k in range(SGD_STEPS):
                p.grad = g64[k].to(dt).clone()
                opt.step()
                fx.add(f"{dn}.{name}.step{k + 1}", p)
    fx.meta("lr", repr(SGD_LR))
    fx.meta("momentum", repr(SGD_MOMENTUM))
    fx.meta("dampening", repr(SGD_DAMPENING))
    fx.meta("weight_decay", repr(SGD_WEIGHT_DECAY))
    fx.meta("steps", str(SGD_STEPS))
    fx.meta("cases", ",".join(valid))
    fx.meta("invalid_cases", ",".join(invalid))
    fx.write()


# ---- Adam and AdamW -----------------------------------------------------------------------------------

ADAM_STEPS = 8
ADAM_SHAPES = [(3, 5), (17,), (2, 2, 2)]  # 17: a one-lane tail after the vectors of every SIMD width
ADAM_NO_GRAD = [(3, 2), (6, 2)]  # (step, parameter): p.grad = None, so PyTorch skips the parameter
ADAM_CASES = [  # name, optimizer, keyword arguments (lr given; the rest PyTorch's defaults)
    ("adam", "Adam", dict(lr=0.05)),
    ("adam_wd", "Adam", dict(lr=0.05, weight_decay=0.1)),
    ("adam_amsgrad", "Adam", dict(lr=0.05, amsgrad=True)),
    ("adam_maximize", "Adam", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("adamw", "AdamW", dict(lr=0.05)),
    ("adamw_amsgrad", "AdamW", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True)),
]


def make_adam():
    """torch.optim.Adam / AdamW (foreach=False, the single-tensor rule) over three parameters for
    ADAM_STEPS steps with fixed gradients; gradients shrink over the steps, so that exp_avg_sq falls
    and AMSGrad's maximum differs from it."""
    fx = Fixture("adam")
    torch.manual_seed(13)
    p064 = [torch.randn(s, dtype=torch.float64) for s in ADAM_SHAPES]
    g64 = [[torch.randn(s, dtype=torch.float64) * 2.0 * 0.7 ** k for s in ADAM_SHAPES] for k in range(ADAM_STEPS)]
    for dn, dt in DTYPES.items():
        for j, p in enumerate(p064):
            fx.add(f"{dn}.param{j}", p.to(dt))
        for k in range(ADAM_STEPS):
            for j in range(len(ADAM_SHAPES)):
                if (k + 1, j) not in ADAM_NO_GRAD:
                    fx.add(f"{dn}.grad{k + 1}.{j}", g64[k][j].to(dt))
        for name, kind, kw in ADAM_CASES:
            ps = [torch.nn.Parameter(p.to(dt).clone()) for p in p064]
            opt = getattr(torch.optim, kind)(ps, foreach=False, **kw)
            for k in range(ADAM_STEPS):
                for j, p in enumerate(ps):
                    p.grad = None if (k + 1, j) in ADAM_NO_GRAD else g64[k][j].to(dt).clone()
                opt.step()
                for j, p in enumerate(ps):
                    fx.add(f"{dn}.{name}.step{k + 1}.param{j}", p)
            for j, p in enumerate(ps):
                st = opt.state[p]
                for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                    if key in st:
                        fx.add(f"{dn}.{name}.final.{key}.{j}", st[key])
                fx.meta(f"{name}.final.step.{j}", repr(st["step"].item()))
    for name, kind, kw in ADAM_CASES:
        group = torch.optim.Adam([torch.zeros(1)]).defaults if kind == "Adam" else \
            torch.optim.AdamW([torch.zeros(1)]).defaults
        group = dict(group, **kw)  # every hyper-parameter, PyTorch's defaults for those not given
        fx.meta(name + ".optimizer", kind)
        for key in ("lr", "eps", "weight_decay"):
            fx.meta(f"{name}.{key}", repr(float(group[key])))
        fx.meta(name + ".betas", json.dumps(list(group["betas"])))
        fx.meta(name + ".amsgrad", str(group["amsgrad"]).lower())
        fx.meta(name + ".maximize", str(group["maximize"]).lower())
    fx.meta("cases", ",".join(name for name, _, _ in ADAM_CASES))
    fx.meta("steps", str(ADAM_STEPS))
    fx.meta("params", str(len(ADAM_SHAPES)))
    fx.meta("no_grad", json.dumps([list(x) for x in ADAM_NO_GRAD]))
    fx.write()


# ---- Sequence-model ops: embedding, broadcast matmul, clip_grad_norm_ ---------------------------------

SEQ_MATMUL_CASES = [  # name, a shape, b shape
    ("a4d_b3d", (2, 1, 3, 4), (5, 4, 2)),
    ("a2d_b4d", (3, 4), (2, 2, 4, 5)),
    ("both_broadcast", (4, 1, 2, 3), (1, 3, 3, 2)),
    ("same_batch", (2, 3, 4), (2, 4, 5)),
]
SEQ_CLIP_CASES = [  # name, max_norm, norm_type
    ("norm2", 1.0, 2.0),
    ("norm_inf", 0.5, float("inf")),
    ("norm2_unclipped", 100.0, 2.0),
]
SEQ_CLIP_SHAPES = [(3, 4), (5,), (2, 2, 2)]


def make_seq_ops():
    fx = Fixture("seq_ops")
    torch.manual_seed(12)
    # F.embedding: ids (3, 5) into a (7, 4) table, with repeated ids (and row 6 never used).
    ids = torch.tensor([[3, 0, 3, 5, 1], [0, 0, 2, 3, 4], [5, 3, 1, 1, 3]], dtype=torch.int64)
    w64 = torch.randn(7, 4, dtype=torch.float64)
    dy64 = torch.randn(3, 5, 4, dtype=torch.float64)
    fx.add("embedding.ids", ids)  # I64
    for dn, dt in DTYPES.items():
        w, dy = leaf(w64.to(dt)), dy64.to(dt)
        y = F.embedding(ids, w)
        (dw,) = grads(y, [w], dy)
        p = f"{dn}.embedding"
        fx.add(p + ".weight", w)
        fx.add(p + ".output", y)
        fx.add(p + ".grad_output", dy)
        fx.add(p + ".grad_weight", dw)
    # torch.matmul with broadcast batch dims: output and both gradients.
    for name, sa, sb in SEQ_MATMUL_CASES:
        a64, b64 = torch.randn(sa, dtype=torch.float64), torch.randn(sb, dtype=torch.float64)
        dy64 = torch.randn(torch.matmul(a64, b64).shape, dtype=torch.float64)
        fx.meta(f"matmul_{name}.a_shape", json.dumps(list(sa)))
        fx.meta(f"matmul_{name}.b_shape", json.dumps(list(sb)))
        for dn, dt in DTYPES.items():
            a, b, dy = leaf(a64.to(dt)), leaf(b64.to(dt)), dy64.to(dt)
            y = torch.matmul(a, b)
            da, db = grads(y, [a, b], dy)
            p = f"{dn}.matmul_{name}"
            for field, t in [("a", a), ("b", b), ("output", y), ("grad_output", dy), ("grad_a", da),
                             ("grad_b", db)]:
                fx.add(p + "." + field, t)
    # clip_grad_norm_ over three gradients: the total norm and the clipped gradients.
    g64 = [torch.randn(s, dtype=torch.float64) * 0.7 for s in SEQ_CLIP_SHAPES]
    fx.meta("clip.params", str(len(SEQ_CLIP_SHAPES)))
    for name, max_norm, norm_type in SEQ_CLIP_CASES:
        fx.meta(f"clip_{name}.max_norm", repr(max_norm))
        fx.meta(f"clip_{name}.norm_type", repr(norm_type))
        for dn, dt in DTYPES.items():
            params = [torch.zeros(s, dtype=dt, requires_grad=True) for s in SEQ_CLIP_SHAPES]
            for prm, g in zip(params, g64):
                prm.grad = g.to(dt).clone()
            p = f"{dn}.clip_{name}"
            for j, prm in enumerate(params):
                fx.add(f"{p}.grad{j}", prm.grad)
            total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
            fx.add(p + ".total_norm", total)
            for j, prm in enumerate(params):
                fx.add(f"{p}.clipped{j}", prm.grad)
    fx.write()

# ---- Attention and the GPT block --------------------------------------------------------------------

def unfused_attention(q, k, v, causal):
    """softmax(q k^T / sqrt(D), masked with -inf above the diagonal when causal) @ v on (..., T, D):
    the formula of nanoGPT's slow path (PyTorch 1.13 has no F.scaled_dot_product_attention)."""
    T = q.size(-2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    if causal:
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
    return F.softmax(att, dim=-1) @ v


def split_heads_attention(qkv, heads):
    """nanoGPT's CausalSelfAttention between c_attn and c_proj: (B, T, 3C) -> (B, T, C)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    q, k, v = qkv.split(C, dim=2)
    q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
    y = unfused_attention(q, k, v, True)
    return y.transpose(1, 2).contiguous().view(B, T, C)


def make_attention():
    """Cases f32/f64 x full/causal on (B, H, T, D) q, k, v (odd T and D), and a packed (B, T, 3C) qkv."""
    fx = Fixture("attention")
    torch.manual_seed(7)
    shape = (1, 2, 5, 3)
    q64, k64, v64 = (torch.randn(shape, dtype=torch.float64) for _ in range(3))
    dy64 = torch.randn(shape, dtype=torch.float64)
    B, T, C, heads = 2, 5, 6, 2
    qkv64 = torch.randn(B, T, 3 * C, dtype=torch.float64)
    dyp64 = torch.randn(B, T, C, dtype=torch.float64)
    fx.meta("packed.heads", str(heads))
    for dn, dt in DTYPES.items():
        for name, causal in (("full", False), ("causal", True)):
            p = f"{dn}.{name}"
            q, k, v = leaf(q64.to(dt)), leaf(k64.to(dt)), leaf(v64.to(dt))
            y = unfused_attention(q, k, v, causal)
            dq, dk, dv = grads(y, [q, k, v], dy64.to(dt))
            for n, t in (("q", q), ("k", k), ("v", v), ("output", y), ("grad_output", dy64.to(dt)),
                         ("grad_q", dq), ("grad_k", dk), ("grad_v", dv)):
                fx.add(f"{p}.{n}", t)
        qkv = leaf(qkv64.to(dt))
        y = split_heads_attention(qkv, heads)
        (dqkv,) = grads(y, [qkv], dyp64.to(dt))
        for n, t in (("qkv", qkv), ("output", y), ("grad_output", dyp64.to(dt)), ("grad_qkv", dqkv)):
            fx.add(f"{dn}.packed.{n}", t)
    fx.write()


class RMSNormByHand(torch.nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dim (PyTorch 1.13 has no nn.RMSNorm); eps is
    normlab's nn::RMSNorm default, the machine epsilon of the dtype."""

    def __init__(self, C, eps):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(C))

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class TokenBatchNorm(torch.nn.BatchNorm1d):
    """BatchNorm1d over the B x T tokens of (B, T, C): the naive BatchNorm of NLP."""

    def forward(self, x):
        B, T, C = x.shape
        return super().forward(x.reshape(B * T, C)).reshape(B, T, C)


class GPTAttention(torch.nn.Module):
    def __init__(self, C, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = torch.nn.Linear(C, 3 * C)
        self.c_proj = torch.nn.Linear(C, C)

    def forward(self, x):
        return self.c_proj(split_heads_attention(self.c_attn(x), self.heads))


class GPTMLP(torch.nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = torch.nn.Linear(C, 4 * C)
        self.gelu = torch.nn.GELU(approximate="tanh")  # normlab's nn::GELU (nanoGPT: exact erf)
        self.c_proj = torch.nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class GPTBlock(torch.nn.Module):
    """nanoGPT's Block with a choice of norm (layer, rms, batch, none) and position (pre, post)."""

    def __init__(self, C, heads, norm, position, dt):
        super().__init__()
        make = {"layer": lambda: torch.nn.LayerNorm(C),
                "rms": lambda: RMSNormByHand(C, torch.finfo(dt).eps),
                "batch": lambda: TokenBatchNorm(C),
                "none": lambda: torch.nn.Identity()}[norm]
        self.position = position
        self.ln_1 = make()
        self.attn = GPTAttention(C, heads)
        self.ln_2 = make()
        self.mlp = GPTMLP(C)

    def forward(self, x):
        if self.position == "pre":
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))


BLOCK_NORMS = ["layer", "rms", "batch", "none"]
BLOCK_POSITIONS = ["pre", "post"]


def make_transformer_block():
    """Per dtype, norm and position: the block's state_dict (weights N(0, 0.3), biases N(0, 0.1), norm
    scales 1 + N(0, 0.2): larger than nanoGPT's init, so every path matters), an input, the output in
    training mode and the gradients of sum(output * grad_output) w.r.t. the input and every parameter;
    for BatchNorm also the running statistics after that step."""
    fx = Fixture("transformer_block")
    B, T, C, heads = 2, 5, 6, 2
    fx.meta("width", str(C))
    fx.meta("heads", str(heads))
    fx.meta("cases", ",".join(f"{n}_{p}" for n in BLOCK_NORMS for p in BLOCK_POSITIONS))
    for norm in BLOCK_NORMS:
        for position in BLOCK_POSITIONS:
            torch.manual_seed(11)
            ref = GPTBlock(C, heads, norm, position, torch.float64).double()
            with torch.no_grad():
                for name, t in ref.named_parameters():
                    if name.startswith("ln_"):
                        t.copy_(1 + 0.2 * torch.randn_like(t) if name.endswith("weight") else 0.1 * torch.randn_like(t))
                    else:
                        t.copy_((0.3 if name.endswith("weight") else 0.1) * torch.randn_like(t))
            state64 = {n: t.detach().clone() for n, t in ref.state_dict().items()}
            x64 = torch.randn(B, T, C, dtype=torch.float64)
            dy64 = torch.randn(B, T, C, dtype=torch.float64)
            for dn, dt in DTYPES.items():
                p = f"{dn}.{norm}_{position}"
                block = GPTBlock(C, heads, norm, position, dt).to(dt)
                block.load_state_dict({n: (t if t.dtype == torch.int64 else t.to(dt)) for n, t in state64.items()})
                block.train()
                for n, t in block.state_dict().items():
                    fx.add(f"{p}.state.{n}", t)
                x = leaf(x64.to(dt))
                y = block(x)
                names = [n for n, _ in block.named_parameters()]
                gs = grads(y, [x] + [t for _, t in block.named_parameters()], dy64.to(dt))
                fx.add(p + ".input", x)
                fx.add(p + ".output", y)
                fx.add(p + ".grad_output", dy64.to(dt))
                fx.add(p + ".grad_input", gs[0])
                for n, g in zip(names, gs[1:]):
                    fx.add(f"{p}.grad.{n}", g)
                for n, t in block.named_buffers():
                    fx.add(f"{p}.after.{n}", t)
    fx.write()

# ---- GPT: 5 AdamW steps, llm.c style ----------------------------------------------------------------

def gpt_norm(norm, C, dt):
    """ln_f of GPTModel: the blocks' norm (GPTBlock's choices)."""
    return {"layer": lambda: torch.nn.LayerNorm(C),
            "rms": lambda: RMSNormByHand(C, torch.finfo(dt).eps),
            "batch": lambda: TokenBatchNorm(C),
            "none": lambda: torch.nn.Identity()}[norm]()


class GPTModel(torch.nn.Module):
    """nanoGPT's GPT with GPTBlock's norm and position, no dropout, and lm_head untied from wte (as
    normlab's nn::GPT): its state_dict names are nanoGPT's."""

    def __init__(self, V, block_size, n_layer, heads, C, norm, position, dt):
        super().__init__()
        self.transformer = torch.nn.ModuleDict(dict(
            wte=torch.nn.Embedding(V, C),
            wpe=torch.nn.Embedding(block_size, C),
            h=torch.nn.ModuleList([GPTBlock(C, heads, norm, position, dt) for _ in range(n_layer)]),
            ln_f=gpt_norm(norm, C, dt)))
        self.lm_head = torch.nn.Linear(C, V, bias=False)

    def forward(self, idx):
        T = idx.size(1)
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T, dtype=torch.long))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


GPT_CONFIG = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, width=8)
GPT_STEPS_CASES = ["layer_pre", "rms_pre", "batch_pre", "none_pre", "layer_post"]
GPT_ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
GPT_STEPS, GPT_MAX_NORM, GPT_BATCH = 5, 1.0, 3


def make_gpt_steps():
    """GPTModel trained 5 steps on one fixed batch as nanoGPT trains: cross-entropy of the logits,
    clip_grad_norm_(1.0), AdamW with nanoGPT's configure_optimizers groups (weight decay 0.1 on the
    parameters of 2 or more dims: Linear weights and both embeddings; 0 on biases and norm weights).
    Per case (norm_position): PyTorch's float64 run from the stored float32 initial weights (the
    reference values) and how far its own float32 run lands from it (the float32 tolerance)."""
    fx = Fixture("gpt_steps")
    c = GPT_CONFIG
    V, T, C = c["vocab_size"], c["block_size"], c["width"]
    torch.manual_seed(21)
    x = torch.randint(0, V, (GPT_BATCH, T))
    y = torch.randint(0, V, (GPT_BATCH, T))
    fx.add("input", x)
    fx.add("target", y)
    # Initial weights, one set for every case (a case loads the names its norm has): larger than
    # nanoGPT's N(0, 0.02), so that attention, MLP and norms all shape the loss.
    ref = GPTModel(V, T, c["n_layer"], c["n_head"], C, "layer", "pre", torch.float64).double()
    init = {}
    for name, t in ref.named_parameters():
        if ".ln_" in name:
            v = 1 + 0.1 * torch.randn_like(t) if name.endswith("weight") else 0.05 * torch.randn_like(t)
        elif ".wte." in name or ".wpe." in name:
            v = 0.5 * torch.randn_like(t)
        else:
            v = (0.2 if name.endswith("weight") else 0.05) * torch.randn_like(t)
        init[name] = v.float()
        fx.add("init." + name, init[name])

    def run(norm, position, dt):
        model = GPTModel(V, T, c["n_layer"], c["n_head"], C, norm, position, dt).to(dt)
        with torch.no_grad():
            for name, t in model.named_parameters():
                t.copy_(init[name].to(dt))
        return train_like_nanogpt(model, x, y, V)

    for case in GPT_STEPS_CASES:
        norm, position = case.split("_")
        add_steps_case(fx, case, run(norm, position, torch.float64), run(norm, position, torch.float32))
    for key, value in c.items():
        fx.meta(key, str(value))
    fx.meta("cases", ",".join(GPT_STEPS_CASES))
    add_steps_meta(fx)
    fx.write()


def train_like_nanogpt(model, x, y, V, max_norm=GPT_MAX_NORM):
    """GPT_STEPS steps in training mode on the batch (x, y): cross-entropy, clip_grad_norm_, AdamW with
    nanoGPT's configure_optimizers groups (weight decay on the parameters of 2 or more dims).
    Returns (repr, losses, gradient norms before clipping, final floating-point state_dict)."""
    model.train()
    params = dict(model.named_parameters())
    groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": GPT_ADAMW["weight_decay"]},
              {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=GPT_ADAMW["lr"], betas=GPT_ADAMW["betas"], eps=GPT_ADAMW["eps"],
                            foreach=False)
    losses, norms = [], []
    for _ in range(GPT_STEPS):
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
        losses.append(loss.item())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm).item())
        opt.step()
    final = {k: v for k, v in model.state_dict().items() if v.dtype.is_floating_point}
    return repr(model), losses, norms, final


def add_steps_case(fx, case, run64, run32):
    """A case's float64 run (losses, grad_norms, final tensors) and the float32 run's deviation from it."""
    text, l64, n64, f64 = run64
    _, l32, n32, f32 = run32
    fx.meta(case + ".module", text)
    for key, a64, a32 in ((case + ".losses", l64, l32), (case + ".grad_norms", n64, n32)):
        fx.add(key, torch.tensor(a64, dtype=torch.float64))
        fx.meta(key + ".float32_deviation", repr(max(abs(a - b) for a, b in zip(a32, a64))))
    for name, t in f64.items():
        key = f"{case}.final.{name}"
        fx.add(key, t)
        fx.meta(key + ".float32_deviation", repr((f32[name].double() - t).abs().max().item()))


def add_steps_meta(fx, max_norm=GPT_MAX_NORM):
    fx.meta("steps", str(GPT_STEPS))
    fx.meta("max_norm", repr(max_norm))
    fx.meta("lr", repr(GPT_ADAMW["lr"]))
    fx.meta("betas", json.dumps(list(GPT_ADAMW["betas"])))
    fx.meta("eps", repr(GPT_ADAMW["eps"]))
    fx.meta("weight_decay", repr(GPT_ADAMW["weight_decay"]))


class CharLSTM(torch.nn.Module):
    """normlab's nn::CharLSTM: Embedding -> LSTM (batch_first) -> Linear to the vocabulary."""

    def __init__(self, V, E, H, L):
        super().__init__()
        self.embedding = torch.nn.Embedding(V, E)
        self.lstm = torch.nn.LSTM(E, H, num_layers=L, batch_first=True)
        self.head = torch.nn.Linear(H, V)

    def forward(self, idx):
        return self.head(self.lstm(self.embedding(idx))[0])


CHAR_LSTM_CONFIG = dict(vocab_size=11, embed_dim=6, hidden_size=8, num_layers=2)
CHAR_LSTM_MAX_NORM = 0.2  # the gradient norms are about 0.23 from PyTorch's init: every step clips


def make_char_lstm_steps():
    """CharLSTM trained as make_gpt_steps trains the GPT (the same steps and AdamW groups; clipping at
    CHAR_LSTM_MAX_NORM), from PyTorch's default init (seed 31), on one fixed batch (3, 8)."""
    fx = Fixture("char_lstm_steps")
    c = CHAR_LSTM_CONFIG
    V = c["vocab_size"]
    torch.manual_seed(31)
    ref = CharLSTM(V, c["embed_dim"], c["hidden_size"], c["num_layers"])
    init = {k: v.detach().clone() for k, v in ref.named_parameters()}
    for name, t in init.items():
        fx.add("init." + name, t)
    x = torch.randint(0, V, (GPT_BATCH, 8))
    y = torch.randint(0, V, (GPT_BATCH, 8))
    fx.add("input", x)
    fx.add("target", y)

    def run(dt):
        model = CharLSTM(V, c["embed_dim"], c["hidden_size"], c["num_layers"]).to(dt)
        with torch.no_grad():
            for name, t in model.named_parameters():
                t.copy_(init[name].to(dt))
        return train_like_nanogpt(model, x, y, V, CHAR_LSTM_MAX_NORM)

    add_steps_case(fx, "char_lstm", run(torch.float64), run(torch.float32))
    for key, value in c.items():
        fx.meta(key, str(value))
    add_steps_meta(fx, CHAR_LSTM_MAX_NORM)
    fx.write()


# ---- LSTM ---------------------------------------------------------------------------------------------

def make_lstm():
    """torch.nn.LSTM with its default init (state_dict saved under <dt>.<case>.state.<name>), on a
    random input (and initial state), and the gradients of the fixed loss
    <output, grad_output> + <h_n, grad_h_n> + <c_n, grad_c_n> w.r.t. the input, h0, c0 and every
    parameter (<dt>.<case>.grad.<name>)."""
    fx = Fixture("lstm")
    torch.manual_seed(11)
    cases = [  # name, input_size, hidden_size, num_layers, bias, batch_first, T, B, initial state
        ("two_layers", 5, 4, 2, True, True, 6, 3, True),
        ("one_layer_nobias", 3, 5, 1, False, False, 4, 2, False),
    ]
    for name, I, H, L, bias, bf, T, B, init_state in cases:
        for key, value in [("input_size", I), ("hidden_size", H), ("num_layers", L)]:
            fx.meta(f"{name}.{key}", str(value))
        for key, value in [("bias", bias), ("batch_first", bf), ("initial_state", init_state)]:
            fx.meta(f"{name}.{key}", str(value).lower())
        m64 = torch.nn.LSTM(I, H, num_layers=L, bias=bias, batch_first=bf).double()
        x64 = torch.randn((B, T, I) if bf else (T, B, I), dtype=torch.float64)
        h064, c064 = torch.randn(L, B, H, dtype=torch.float64), torch.randn(L, B, H, dtype=torch.float64)
        dy64 = torch.randn((B, T, H) if bf else (T, B, H), dtype=torch.float64)
        dh64, dc64 = torch.randn(L, B, H, dtype=torch.float64), torch.randn(L, B, H, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            m = torch.nn.LSTM(I, H, num_layers=L, bias=bias, batch_first=bf).to(dt)
            m.load_state_dict({k: v.to(dt) for k, v in m64.state_dict().items()}, strict=True)
            x = leaf(x64.to(dt))
            p = f"{dn}.{name}"
            if init_state:
                h0, c0 = leaf(h064.to(dt)), leaf(c064.to(dt))
                y, (hn, cn) = m(x, (h0, c0))
            else:
                h0 = c0 = None
                y, (hn, cn) = m(x)
            params = list(m.named_parameters())
            live = [x] + ([h0, c0] if init_state else []) + [t for _, t in params]
            gs = torch.autograd.grad([y, hn, cn], live, [dy64.to(dt), dh64.to(dt), dc64.to(dt)])
            for k, v in m.state_dict().items():
                fx.add(f"{p}.state.{k}", v)
            fx.add(p + ".input", x)
            fx.add(p + ".output", y)
            fx.add(p + ".h_n", hn)
            fx.add(p + ".c_n", cn)
            fx.add(p + ".grad_output", dy64.to(dt))
            fx.add(p + ".grad_h_n", dh64.to(dt))
            fx.add(p + ".grad_c_n", dc64.to(dt))
            fx.add(p + ".grad_input", gs[0])
            if init_state:
                fx.add(p + ".h0", h0)
                fx.add(p + ".c0", c0)
                fx.add(p + ".grad_h0", gs[1])
                fx.add(p + ".grad_c0", gs[2])
            for (k, _), g in zip(params, gs[3 if init_state else 1:]):
                fx.add(f"{p}.grad.{k}", g)
    fx.write()


def ln_lstm_forward(x, p, L, H, batch_first, h0, c0, eps=1e-5):
    """The layer-normalized LSTM (Ba, Kiros, Hinton 2016) as nn::LayerNormLSTM computes it, from the
    parameters p by name: G = LN_ih(x W_ih^T) + LN_hh(h W_hh^T) + b (LNs over the 4H vector, gain
    only), gates i, f, g, o; c = sigmoid(f) c + sigmoid(i) tanh(g); h = sigmoid(o) tanh(LN_c(c))."""
    seq = x.transpose(0, 1) if batch_first else x
    T, B = seq.shape[0], seq.shape[1]
    hn, cn = [], []
    for k in range(L):
        w_ih, w_hh, b = p[f"weight_ih_l{k}"], p[f"weight_hh_l{k}"], p[f"bias_l{k}"]
        g_ih, g_hh = p[f"ln_ih_l{k}.weight"], p[f"ln_hh_l{k}.weight"]
        g_c, b_c = p[f"ln_c_l{k}.weight"], p[f"ln_c_l{k}.bias"]
        h = h0[k] if h0 is not None else torch.zeros(B, H, dtype=x.dtype)
        c = c0[k] if c0 is not None else torch.zeros(B, H, dtype=x.dtype)
        outs = []
        for t in range(T):
            G = (F.layer_norm(seq[t] @ w_ih.t(), (4 * H,), g_ih, None, eps)
                 + F.layer_norm(h @ w_hh.t(), (4 * H,), g_hh, None, eps) + b)
            i, f, g, o = G.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(F.layer_norm(c, (H,), g_c, b_c, eps))
            outs.append(h)
        seq = torch.stack(outs)
        hn.append(h)
        cn.append(c)
    return (seq.transpose(0, 1) if batch_first else seq), torch.stack(hn), torch.stack(cn)


def make_ln_lstm():
    """ln_lstm_forward with random parameters (LayerNorm gains 1 + 0.2 randn, shifts 0.2 randn, so
    that they matter), fields as lstm.safetensors': <dt>.<case>.state.<name>, input, h0, c0, output,
    h_n, c_n, grad_* of the same fixed loss, grad.<name>; and for the float32 cases the metadata
    f32.<case>.<field>.float32_deviation: the largest distance of PyTorch's float32 result from a
    float64 run on the same values (LayerNorms over small or nearly constant rows make some float32
    gradients uncertain to ~1e-5, beyond the usual float32 tolerance)."""
    fx = Fixture("ln_lstm")
    torch.manual_seed(12)
    cases = [  # name, input_size, hidden_size, num_layers, batch_first, T, B, initial state
        ("two_layers", 5, 4, 2, True, 6, 3, True),
        ("one_layer", 3, 5, 1, False, 4, 2, False),
    ]
    for name, I, H, L, bf, T, B, init_state in cases:
        for key, value in [("input_size", I), ("hidden_size", H), ("num_layers", L)]:
            fx.meta(f"{name}.{key}", str(value))
        for key, value in [("batch_first", bf), ("initial_state", init_state)]:
            fx.meta(f"{name}.{key}", str(value).lower())
        bound = H ** -0.5
        p64 = {}
        for k in range(L):
            p64[f"weight_ih_l{k}"] = torch.empty(4 * H, I if k == 0 else H, dtype=torch.float64).uniform_(-bound, bound)
            p64[f"weight_hh_l{k}"] = torch.empty(4 * H, H, dtype=torch.float64).uniform_(-bound, bound)
            p64[f"bias_l{k}"] = torch.empty(4 * H, dtype=torch.float64).uniform_(-bound, bound)
        for k in range(L):
            p64[f"ln_ih_l{k}.weight"] = 1 + 0.2 * torch.randn(4 * H, dtype=torch.float64)
            p64[f"ln_hh_l{k}.weight"] = 1 + 0.2 * torch.randn(4 * H, dtype=torch.float64)
            p64[f"ln_c_l{k}.weight"] = 1 + 0.2 * torch.randn(H, dtype=torch.float64)
            p64[f"ln_c_l{k}.bias"] = 0.2 * torch.randn(H, dtype=torch.float64)
        x64 = torch.randn((B, T, I) if bf else (T, B, I), dtype=torch.float64)
        h064, c064 = torch.randn(L, B, H, dtype=torch.float64), torch.randn(L, B, H, dtype=torch.float64)
        dy64 = torch.randn((B, T, H) if bf else (T, B, H), dtype=torch.float64)
        dh64, dc64 = torch.randn(L, B, H, dtype=torch.float64), torch.randn(L, B, H, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            pre = f"{dn}.{name}"
            params = {k: leaf(v.to(dt)) for k, v in p64.items()}
            x = leaf(x64.to(dt))
            h0, c0 = (leaf(h064.to(dt)), leaf(c064.to(dt))) if init_state else (None, None)
            def run(x, params, h0, c0):
                y, hn, cn = ln_lstm_forward(x, params, L, H, bf, h0, c0)
                live = [x] + ([h0, c0] if init_state else []) + list(params.values())
                gs = torch.autograd.grad([y, hn, cn], live, [dy64.to(x.dtype), dh64.to(x.dtype), dc64.to(x.dtype)])
                return y, hn, cn, gs

            y, hn, cn, gs = run(x, params, h0, c0)
            if dt == torch.float32:
                # PyTorch's own float32 error: the distance of each result from a float64 run on the
                # same (float32-rounded) values.
                def up(t):
                    return leaf(t.double()) if t is not None else None
                ref = run(up(x), {k: up(v) for k, v in params.items()}, up(h0), up(c0))
                fields = ["output", "h_n", "c_n", "grad_input"] + (["grad_h0", "grad_c0"] if init_state else [])
                fields += [f"grad.{k}" for k in params]
                for field, a, b in zip(fields, [y, hn, cn] + list(gs), ref[:3] + tuple(ref[3])):
                    fx.meta(f"{pre}.{field}.float32_deviation", repr((a.double() - b).abs().max().item()))
            for k, v in params.items():
                fx.add(f"{pre}.state.{k}", v)
            for field, t in [("input", x), ("output", y), ("h_n", hn), ("c_n", cn), ("grad_output", dy64.to(dt)),
                             ("grad_h_n", dh64.to(dt)), ("grad_c_n", dc64.to(dt)), ("grad_input", gs[0])]:
                fx.add(f"{pre}.{field}", t)
            if init_state:
                for field, t in [("h0", h0), ("c0", c0), ("grad_h0", gs[1]), ("grad_c0", gs[2])]:
                    fx.add(f"{pre}.{field}", t)
            for k, g in zip(params, gs[3 if init_state else 1:]):
                fx.add(f"{pre}.grad.{k}", g)
    fx.write()


def bn_lstm_forward(x, p, bufs, L, H, batch_first, training, slots, trained, momentum=0.1, eps=1e-5):
    """The recurrent batch-normalized LSTM (Cooijmans et al. 2016) as nn::BatchNormLSTM computes it:
    G = BN_ih(x W_ih^T) + BN_hh(h W_hh^T) + b (no shifts), gates i, f, g, o;
    c = sigmoid(f) c + sigmoid(i) tanh(g); h = sigmoid(o) tanh(BN_c(c)). Step t uses row `slot` of
    the (slots, C) running statistics in bufs (updated in place in training): min(t, slots - 1) in
    training, min(t, trained - 1, slots - 1) in eval."""
    seq = x.transpose(0, 1) if batch_first else x
    T, B = seq.shape[0], seq.shape[1]
    last = slots - 1 if training else min(max(trained - 1, 0), slots - 1)
    hn, cn = [], []

    def bn(name, v, slot):
        return F.batch_norm(v, bufs[name + ".running_mean"][slot], bufs[name + ".running_var"][slot],
                            p[name + ".weight"], p.get(name + ".bias"), training, momentum, eps)

    for k in range(L):
        w_ih, w_hh, b = p[f"weight_ih_l{k}"], p[f"weight_hh_l{k}"], p[f"bias_l{k}"]
        h = torch.zeros(B, H, dtype=x.dtype)
        c = torch.zeros(B, H, dtype=x.dtype)
        wx = seq @ w_ih.t()
        outs = []
        for t in range(T):
            slot = min(t, last)
            G = bn(f"bn_ih_l{k}", wx[t], slot) + bn(f"bn_hh_l{k}", h @ w_hh.t(), slot) + b
            i, f, g, o = G.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(bn(f"bn_c_l{k}", c, slot))
            outs.append(h)
        seq = torch.stack(outs)
        hn.append(h)
        cn.append(c)
    return (seq.transpose(0, 1) if batch_first else seq), torch.stack(hn), torch.stack(cn)


def make_bn_lstm():
    """bn_lstm_forward: one training step (forward on `train_input`, the gradients of the fixed loss
    <output, grad_output> + <h_n, grad_h_n> + <c_n, grad_c_n>), the running statistics after it
    (<dt>.<case>.after.<buffer>), then eval on the longer `eval_input` (eval_output: steps beyond the
    trained length read the last trained step's statistics). <dt>.<case>.state.<name> is the initial
    state_dict under nn::BatchNormLSTM's names (BN gains 0.1 + 0.05 randn, BN_c shifts 0.1 randn).
    The float32 cases carry <field>.float32_deviation metadata as ln_lstm's (batch statistics over
    3 or 4 samples make some float32 gradients uncertain to ~1e-5)."""
    fx = Fixture("bn_lstm")
    torch.manual_seed(13)
    cases = [  # name, I, H, layers, batch_first, max_steps, shared, B, T train, T eval
        ("per_step", 3, 4, 2, True, 4, False, 4, 3, 6),
        ("capped", 2, 3, 1, False, 2, False, 3, 4, 3),
        ("shared", 3, 3, 1, False, 10, True, 3, 4, 5),
    ]
    for name, I, H, L, bf, max_steps, shared, B, Tt, Te in cases:
        for key, value in [("input_size", I), ("hidden_size", H), ("num_layers", L), ("max_steps", max_steps)]:
            fx.meta(f"{name}.{key}", str(value))
        for key, value in [("batch_first", bf), ("shared_statistics", shared)]:
            fx.meta(f"{name}.{key}", str(value).lower())
        slots = 1 if shared else max_steps
        bound = H ** -0.5
        p64 = {}
        for k in range(L):
            p64[f"weight_ih_l{k}"] = torch.empty(4 * H, I if k == 0 else H, dtype=torch.float64).uniform_(-bound, bound)
            p64[f"weight_hh_l{k}"] = torch.empty(4 * H, H, dtype=torch.float64).uniform_(-bound, bound)
            p64[f"bias_l{k}"] = torch.empty(4 * H, dtype=torch.float64).uniform_(-bound, bound)
        for k in range(L):
            p64[f"bn_ih_l{k}.weight"] = 0.1 + 0.05 * torch.randn(4 * H, dtype=torch.float64)
            p64[f"bn_hh_l{k}.weight"] = 0.1 + 0.05 * torch.randn(4 * H, dtype=torch.float64)
            p64[f"bn_c_l{k}.weight"] = 0.1 + 0.05 * torch.randn(H, dtype=torch.float64)
            p64[f"bn_c_l{k}.bias"] = 0.1 * torch.randn(H, dtype=torch.float64)
        shape = (lambda T: (B, T, I)) if bf else (lambda T: (T, B, I))
        oshape = (lambda T: (B, T, H)) if bf else (lambda T: (T, B, H))
        xt64, xe64 = torch.randn(shape(Tt), dtype=torch.float64), torch.randn(shape(Te), dtype=torch.float64)
        dy64 = torch.randn(oshape(Tt), dtype=torch.float64)
        dh64, dc64 = torch.randn(L, B, H, dtype=torch.float64), torch.randn(L, B, H, dtype=torch.float64)
        for dn, dt in DTYPES.items():
            pre = f"{dn}.{name}"
            params = {k: leaf(v.to(dt)) for k, v in p64.items()}
            bufs = {}
            for k in range(L):
                for bn_name, C in [(f"bn_ih_l{k}", 4 * H), (f"bn_hh_l{k}", 4 * H), (f"bn_c_l{k}", H)]:
                    bufs[bn_name + ".running_mean"] = torch.zeros(slots, C, dtype=dt)
                    bufs[bn_name + ".running_var"] = torch.ones(slots, C, dtype=dt)
            for k, v in list(params.items()) + list(bufs.items()):
                fx.add(f"{pre}.state.{k}", v)
            fx.add(f"{pre}.state.trained_steps", torch.tensor(0, dtype=dt))
            x = leaf(xt64.to(dt))
            y, hn, cn = bn_lstm_forward(x, params, bufs, L, H, bf, True, slots, 0)
            live = [x] + list(params.values())
            gs = torch.autograd.grad([y, hn, cn], live, [dy64.to(dt), dh64.to(dt), dc64.to(dt)])
            for field, t in [("train_input", x), ("output", y), ("h_n", hn), ("c_n", cn),
                             ("grad_output", dy64.to(dt)), ("grad_h_n", dh64.to(dt)), ("grad_c_n", dc64.to(dt)),
                             ("grad_input", gs[0])]:
                fx.add(f"{pre}.{field}", t)
            for k, g in zip(params, gs[1:]):
                fx.add(f"{pre}.grad.{k}", g)
            trained = min(Tt, slots)
            for k, v in bufs.items():
                fx.add(f"{pre}.after.{k}", v)
            fx.add(f"{pre}.after.trained_steps", torch.tensor(trained, dtype=dt))
            with torch.no_grad():
                ye, _, _ = bn_lstm_forward(xe64.to(dt), params, bufs, L, H, bf, False, slots, trained)
            fx.add(f"{pre}.eval_input", xe64.to(dt))
            fx.add(f"{pre}.eval_output", ye)
            if dt == torch.float32:
                # PyTorch's own float32 error, as in make_ln_lstm: the same steps in float64 on the
                # float32 values.
                p2 = {k: leaf(v.detach().double()) for k, v in params.items()}
                b2 = {k: (torch.zeros_like(v) if k.endswith("mean") else torch.ones_like(v)).double()
                      for k, v in bufs.items()}
                x2 = leaf(x.detach().double())
                y2, hn2, cn2 = bn_lstm_forward(x2, p2, b2, L, H, bf, True, slots, 0)
                gs2 = torch.autograd.grad([y2, hn2, cn2], [x2] + list(p2.values()),
                                          [dy64.to(dt).double(), dh64.to(dt).double(), dc64.to(dt).double()])
                with torch.no_grad():
                    ye2, _, _ = bn_lstm_forward(xe64.to(dt).double(), p2, b2, L, H, bf, False, slots, trained)
                pairs = [("output", y, y2), ("h_n", hn, hn2), ("c_n", cn, cn2), ("grad_input", gs[0], gs2[0]),
                         ("eval_output", ye, ye2)]
                pairs += [(f"grad.{k}", a, b) for k, a, b in zip(params, gs[1:], gs2[1:])]
                pairs += [(f"after.{k}", bufs[k], b2[k]) for k in bufs]
                for field, a, b in pairs:
                    fx.meta(f"{pre}.{field}.float32_deviation", repr((a.double() - b).abs().max().item()))
    fx.write()


# ---- Checking a file written elsewhere ----------------------------------------------------------------

def check(path):
    tensors, metadata = read_safetensors(path)
    print("metadata:", metadata)
    for name, t in tensors.items():
        print(f"{name}: {t.dtype} {list(t.shape)}\n{t}")


def check_mlp(path):
    tensors, metadata = read_safetensors(path)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(),
                                torch.nn.Linear(3, 2))
    model.load_state_dict(tensors, strict=True)
    model.eval()
    x = torch.arange(8, dtype=torch.float32).reshape(2, 4) / 8 - 0.3
    torch.set_printoptions(precision=8)
    print("input:", x)
    print("num_batches_tracked:", model[1].num_batches_tracked)
    print("eval output:", model(x).detach())


# ---- Second derivatives ------------------------------------------------------------------------------

SECOND_ORDER_NORMS = ["none", "batch", "batch_eval", "layer", "group"]
PENALTY_LAMBDA = 0.7


def second_order_forward(p, x, target, norm):
    """x (8, 5) -> Linear(5, 6) -> norm over the 6 features -> ReLU -> Linear(6, 3) -> cross-entropy."""
    h = F.linear(x, p["w1"], p["b1"])
    if norm == "batch":
        h = F.batch_norm(h, None, None, p["norm_weight"], p["norm_bias"], training=True)
    elif norm == "batch_eval":
        h = F.batch_norm(h, p["running_mean"], p["running_var"], p["norm_weight"], p["norm_bias"], training=False)
    elif norm == "layer":
        h = F.layer_norm(h, [6], p["norm_weight"], p["norm_bias"])
    elif norm == "group":
        h = F.group_norm(h, 2, p["norm_weight"], p["norm_bias"])
    return F.cross_entropy(F.linear(torch.relu(h), p["w2"], p["b2"]), target)


def make_second_order():
    """Per dtype and norm: the gradient penalty loss + lambda ||d loss / d input||^2 through
    torch.autograd.grad(create_graph=True) and its gradients, and Hessian-vector products of the loss
    with respect to the parameters (grad of <grad(loss, params, create_graph=True), v>, the
    double-backward torch.autograd.functional.hvp computes)."""
    fx = Fixture("second_order")
    g = torch.Generator().manual_seed(43)
    base = {
        "w1": torch.randn(6, 5, generator=g, dtype=torch.float64) * 0.6,
        "b1": torch.randn(6, generator=g, dtype=torch.float64) * 0.2,
        "norm_weight": 1 + 0.3 * torch.randn(6, generator=g, dtype=torch.float64),
        "norm_bias": 0.2 * torch.randn(6, generator=g, dtype=torch.float64),
        "running_mean": 0.3 * torch.randn(6, generator=g, dtype=torch.float64),
        "running_var": 0.5 + torch.rand(6, generator=g, dtype=torch.float64),
        "w2": torch.randn(3, 6, generator=g, dtype=torch.float64) * 0.6,
        "b2": torch.randn(3, generator=g, dtype=torch.float64) * 0.2,
    }
    x64 = torch.randn(8, 5, generator=g, dtype=torch.float64)
    target = torch.randint(0, 3, (8,), generator=g)
    vs = {k: torch.randn(v.shape, generator=g, dtype=torch.float64) for k, v in base.items()}
    fx.add("target", target)
    for dn, dt in DTYPES.items():
        for norm in SECOND_ORDER_NORMS:
            names = ["w1", "b1", "w2", "b2"]
            if norm != "none":
                names += ["norm_weight", "norm_bias"]
            p = {k: leaf(v.to(dt)) for k, v in base.items()}
            for k in ("running_mean", "running_var"):
                p[k] = p[k].detach()
            x = leaf(x64.to(dt))
            pre = f"{dn}.{norm}"
            fx.add(pre + ".input", x)
            for k in names + (["running_mean", "running_var"] if norm == "batch_eval" else []):
                fx.add(f"{pre}.{k}", p[k])
            loss = second_order_forward(p, x, target, norm)
            (gx,) = torch.autograd.grad(loss, [x], create_graph=True)
            penalty = (gx * gx).sum()
            total = loss + PENALTY_LAMBDA * penalty
            fx.add(pre + ".loss", loss)
            fx.add(pre + ".grad_input", gx)
            fx.add(pre + ".penalty", penalty)
            gs = torch.autograd.grad(total, [p[k] for k in names] + [x])
            for k, gk in zip(names + ["input"], gs):
                fx.add(f"{pre}.penalty_grad.{k}", gk)
            loss = second_order_forward(p, x, target, norm)
            first = torch.autograd.grad(loss, [p[k] for k in names], create_graph=True)
            v = [vs[k].to(dt) for k in names]
            hv = torch.autograd.grad(first, [p[k] for k in names], v)
            for k, vk, hk in zip(names, v, hv):
                fx.add(f"{pre}.hvp_v.{k}", vk)
                fx.add(f"{pre}.hvp.{k}", hk)
    fx.meta("norms", json.dumps(SECOND_ORDER_NORMS))
    fx.meta("lambda", repr(PENALTY_LAMBDA))
    fx.meta("model", "Linear(5, 6) -> norm (BatchNorm1d training/eval, LayerNorm, GroupNorm(2)) -> ReLU -> "
            "Linear(6, 3) -> cross_entropy")
    fx.write()


def causal_attention(qkv, heads):
    """nanoGPT's packed causal self-attention: qkv (B, T, 3C) -> (B, T, C)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    q, k, v = qkv.split(C, dim=2)
    q, k, v = (t.reshape(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
    s = q @ k.transpose(-2, -1) / math.sqrt(C // heads)
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)


def lstm_step(G, c):
    """One LSTM step from the summed pre-activations G (B, 4H), blocks [i | f | g | o]: (o, c')."""
    i, f, g, o = G.chunk(4, 1)
    return torch.sigmoid(o), torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)


def module_forward(kind, p, x, target):
    """The second-order module cases' losses (the C++ test builds the same)."""
    if kind.startswith("cnn."):
        norm = kind[4:]
        h = F.conv2d(x, p["conv_w"], p["conv_b"], padding=1)
        if norm == "batch":
            h = F.batch_norm(h, None, None, p["norm_weight"], p["norm_bias"], training=True)
        elif norm == "batch_eval":
            h = F.batch_norm(h, p["running_mean"], p["running_var"], p["norm_weight"], p["norm_bias"], training=False)
        elif norm == "layer":
            h = F.layer_norm(h, [4, 6, 6], p["norm_weight"], p["norm_bias"])
        elif norm == "group":
            h = F.group_norm(h, 2, p["norm_weight"], p["norm_bias"])
        elif norm == "instance":
            h = F.group_norm(h, 4, p["norm_weight"], p["norm_bias"])
        h = F.max_pool2d(torch.relu(h), 2).flatten(1)
        return F.cross_entropy(F.linear(h, p["fc_w"], p["fc_b"]), target)
    if kind == "rms":
        h = F.linear(x, p["w1"], p["b1"])
        h = h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * p["norm_weight"]
        return F.cross_entropy(F.linear(torch.relu(h), p["w2"], p["b2"]), target)
    if kind == "attention":
        y = causal_attention(F.linear(x, p["w_qkv"], p["b_qkv"]), 2)
        return F.cross_entropy(F.linear(y, p["w_out"]).reshape(-1, 3), target)
    # The LSTMs: x (T, B, I), h0 and c0 given, the last h into a linear head.
    h, c = p["h0"], p["c0"]
    for t in range(x.shape[0]):
        if kind == "lstm":
            o, c = lstm_step(F.linear(x[t], p["w_ih"], p["b_ih"]) + F.linear(h, p["w_hh"], p["b_hh"]), c)
            h = o * torch.tanh(c)
        elif kind == "ln_lstm":
            G = (F.layer_norm(F.linear(x[t], p["w_ih"]), [24], p["ln_ih"]) +
                 F.layer_norm(F.linear(h, p["w_hh"]), [24], p["ln_hh"]) + p["b"])
            o, c = lstm_step(G, c)
            h = o * torch.tanh(F.layer_norm(c, [6], p["ln_c_w"], p["ln_c_b"]))
        else:  # bn_lstm: BatchNorm (batch statistics) on both projections and on c
            G = (F.batch_norm(F.linear(x[t], p["w_ih"]), None, None, p["bn_ih"], None, training=True) +
                 F.batch_norm(F.linear(h, p["w_hh"]), None, None, p["bn_hh"], None, training=True) + p["b"])
            o, c = lstm_step(G, c)
            h = o * torch.tanh(F.batch_norm(c, None, None, p["bn_c_w"], p["bn_c_b"], training=True))
    return F.cross_entropy(F.linear(h, p["w_out"], p["b_out"]), target)


def module_case(kind, g):
    """(parameters that get gradients, constants, input, target) of one module case, float64."""
    r = lambda *s, scale=1.0: torch.randn(*s, generator=g, dtype=torch.float64) * scale
    one = lambda n: 1 + 0.3 * r(n)
    if kind.startswith("cnn."):
        norm = kind[4:]
        p = {"conv_w": r(4, 2, 3, 3, scale=0.4), "conv_b": r(4, scale=0.2),
             "fc_w": r(3, 36, scale=0.3), "fc_b": r(3, scale=0.2)}
        if norm == "layer":
            p.update(norm_weight=1 + 0.3 * r(4, 6, 6), norm_bias=r(4, 6, 6, scale=0.2))
        elif norm != "none":
            p.update(norm_weight=one(4), norm_bias=r(4, scale=0.2))
        const = {"running_mean": r(4, scale=0.3), "running_var": 0.5 + torch.rand(4, generator=g,
                 dtype=torch.float64)} if norm == "batch_eval" else {}
        return p, const, r(4, 2, 6, 6), torch.randint(0, 3, (4,), generator=g)
    if kind == "rms":
        p = {"w1": r(6, 5, scale=0.6), "b1": r(6, scale=0.2), "norm_weight": one(6),
             "w2": r(3, 6, scale=0.6), "b2": r(3, scale=0.2)}
        return p, {}, r(8, 5), torch.randint(0, 3, (8,), generator=g)
    if kind == "attention":
        p = {"w_qkv": r(24, 8, scale=0.4), "b_qkv": r(24, scale=0.1), "w_out": r(3, 8, scale=0.4)}
        return p, {}, r(2, 5, 8), torch.randint(0, 3, (10,), generator=g)
    H, I = 6, 5
    p = {"w_ih": r(4 * H, I, scale=0.4), "w_hh": r(4 * H, H, scale=0.4)}
    if kind == "lstm":
        p.update(b_ih=r(4 * H, scale=0.1), b_hh=r(4 * H, scale=0.1))
    elif kind == "ln_lstm":
        p.update(ln_ih=one(4 * H), ln_hh=one(4 * H), b=r(4 * H, scale=0.1), ln_c_w=one(H), ln_c_b=r(H, scale=0.1))
    else:
        p.update(bn_ih=one(4 * H), bn_hh=one(4 * H), b=r(4 * H, scale=0.1), bn_c_w=one(H), bn_c_b=r(H, scale=0.1))
    p.update(w_out=r(3, H, scale=0.5), b_out=r(3, scale=0.1))
    const = {"h0": r(4, H, scale=0.5), "c0": r(4, H, scale=0.5)}
    return p, const, r(3, 4, I), torch.randint(0, 3, (4,), generator=g)


SECOND_ORDER_MODULES = ["cnn.none", "cnn.batch", "cnn.batch_eval", "cnn.layer", "cnn.group", "cnn.instance",
                        "rms", "attention", "lstm", "ln_lstm", "bn_lstm"]


def make_second_order_modules():
    """Per module case and dtype, as make_second_order: the gradient penalty's loss, d loss / d x,
    the penalty and the gradients of loss + lambda ||d loss / d x||^2 (parameters and input), and
    H v of the loss with respect to the parameters."""
    fx = Fixture("second_order_modules")
    g = torch.Generator().manual_seed(47)
    names = {}
    for kind in SECOND_ORDER_MODULES:
        p64, const64, x64, target = module_case(kind, g)
        vs = {k: torch.randn(v.shape, generator=g, dtype=torch.float64) for k, v in p64.items()}
        names[kind] = list(p64)
        fx.add(kind + ".target", target)
        for dn, dt in DTYPES.items():
            pre = f"{kind}.{dn}"
            p = {k: leaf(v.to(dt)) for k, v in p64.items()}
            p.update({k: v.to(dt) for k, v in const64.items()})
            x = leaf(x64.to(dt))
            for k, v in p.items():
                fx.add(f"{pre}.{k}", v)
            fx.add(pre + ".input", x)
            loss = module_forward(kind, p, x, target)
            (gx,) = torch.autograd.grad(loss, [x], create_graph=True)
            penalty = (gx * gx).sum()
            fx.add(pre + ".loss", loss)
            fx.add(pre + ".grad_input", gx)
            fx.add(pre + ".penalty", penalty)
            gs = torch.autograd.grad(loss + PENALTY_LAMBDA * penalty, [p[k] for k in names[kind]] + [x])
            for k, gk in zip(names[kind] + ["input"], gs):
                fx.add(f"{pre}.penalty_grad.{k}", gk)
            loss = module_forward(kind, p, x, target)
            first = torch.autograd.grad(loss, [p[k] for k in names[kind]], create_graph=True)
            v = [vs[k].to(dt) for k in names[kind]]
            hv = torch.autograd.grad(first, [p[k] for k in names[kind]], v)
            for k, vk, hk in zip(names[kind], v, hv):
                fx.add(f"{pre}.hvp_v.{k}", vk)
                fx.add(f"{pre}.hvp.{k}", hk)
    fx.meta("cases", json.dumps(SECOND_ORDER_MODULES))
    fx.meta("params", json.dumps(names))
    fx.meta("lambda", repr(PENALTY_LAMBDA))
    fx.write()


MAKERS = {"second_order": make_second_order, "second_order_modules": make_second_order_modules}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", metavar="FILE", help="print the tensors of a safetensors file")
    ap.add_argument("--check-mlp", metavar="FILE", help="load FILE into a torch 4-3-2 MLP with BatchNorm")
    ap.add_argument("--only", metavar="NAME", choices=sorted(MAKERS),
                    help="write only this fixture (the others are left as they are)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.check:
        return check(args.check)
    if args.check_mlp:
        return check_mlp(args.check_mlp)
    if not torch.__version__.startswith("1.13"):
        print(f"warning: the fixtures were made with torch 1.13, this is {torch.__version__}")
    os.makedirs(OUT_DIR, exist_ok=True)
    if args.only:
        return MAKERS[args.only]()
    make_layernorm()
    make_batchnorm1d()
    make_groupnorm()
    make_linear()
    make_losses()
    make_sgd()
    make_conv2d()
    make_pool2d()
    make_norms2d()
    make_cnn_steps()
    make_adam()
    make_seq_ops()
    make_attention()
    make_transformer_block()
    make_lstm()
    make_ln_lstm()
    make_bn_lstm()
    make_gpt_steps()
    make_char_lstm_steps()
    make_second_order()
    make_second_order_modules()


if __name__ == "__main__":
    main()

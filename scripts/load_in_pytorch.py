#!/usr/bin/env python3
"""Loads a normlab safetensors checkpoint into PyTorch and prints its logits for fixed inputs.

Usage: /usr/bin/python3 scripts/load_in_pytorch.py build/examples/spirals.safetensors
(the file examples/train_and_save.cc writes; needs Debian's python3-torch). It prints the logits
for x = [[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]] in the format in which train_and_save prints
normlab's for the same inputs, so the two can be compared line by line (they agree to ~1e-6).
With the `safetensors` package installed, `safetensors.torch.load_file(path)` does what
read_safetensors does here.

With --compare LOGITS.txt (the file `train_and_save MODEL OPTIM LOGITS.txt` writes: normlab's
logits for the same inputs, 9 significant digits) it also prints the largest difference and exits
with status 1 if it exceeds 1e-5 (the CTest examples/load_in_pytorch, added when torch is installed).

With --from-metadata it rebuilds the network from the checkpoint's own metadata instead (what
`normlab train` records: arch, model, layers, image_shape, norm, norm.num_groups, activation), an MLP
or a CNN, and feeds it 3 rows x[r, j] = sin(0.01 (r F + j)) for F input features, the rows that
examples/cnn_checkpoint.cc prints normlab's logits for.

A language model's checkpoint (`normlab train --arch gpt --dataset text`, metadata arch=gpt) is
rebuilt with --from-metadata as nanoGPT's GPT (untied lm_head, no dropout, GELU in its tanh form as
normlab's nn::GELU, RMSNorm written out with nn::RMSNorm's eps, BatchNorm over the tokens as
BatchNorm1d over (B T, C)), loaded strictly by name, and fed the fixed ids of gpt_from_metadata,
which examples/gpt_checkpoint.cc prints normlab's logits for (CTest examples/gpt_in_pytorch_*).

With --predict DATA.csv (and a checkpoint of `normlab train --csv ...`) it rebuilds the model from
the metadata, reads the CSV's feature columns by the names the checkpoint records (feature_names),
standardizes them with the recorded training mean and std (preprocessing: x' = (x - mean) / std,
std 0 read as 1), and prints each row's class probabilities under the recorded class names.
--compare-predictions PREDS.csv checks them against `normlab predict`'s file (same predicted
class, probabilities within 1e-5), exiting with status 1 otherwise.
"""
import csv
import argparse
import json
import math
import re
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    """The safetensors format: 8-byte little-endian header length, JSON header, raw data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"])
    return tensors


def read_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


class OutputLSTM(torch.nn.LSTM):
    """torch.nn.LSTM returning its output sequence only (normlab's --arch lstm with norm none)."""

    def forward(self, x):
        return super().forward(x)[0]


class NormalizedLSTM(torch.nn.Module):
    """normlab's normalized --arch lstm cells in eval mode, under nn::LayerNormLSTM's and
    nn::BatchNormLSTM's parameter names, batch_first, returning the last layer's output sequence.
    norm layer: G = LN_ih(x W_ih^T) + LN_hh(h W_hh^T) + b (gains
    only), h = sigmoid(o) tanh(LN_c(c)); batch: the same with BatchNorm and per-step running
    statistics, step t reading row min(t, trained_steps - 1, slots - 1)."""

    def __init__(self, norm, inputs, hidden, layers, steps):
        super().__init__()
        nn = torch.nn
        self.norm, self.hidden, self.layers = norm, hidden, layers
        for k in range(layers):
            width = inputs if k == 0 else hidden
            self.register_parameter(f"weight_ih_l{k}", nn.Parameter(torch.empty(4 * hidden, width)))
            self.register_parameter(f"weight_hh_l{k}", nn.Parameter(torch.empty(4 * hidden, hidden)))
            self.register_parameter(f"bias_l{k}", nn.Parameter(torch.empty(4 * hidden)))
            for part, c, shift in (("ih", 4 * hidden, False), ("hh", 4 * hidden, False), ("c", hidden, True)):
                m = nn.Module()
                m.weight = nn.Parameter(torch.empty(c))
                if shift:
                    m.bias = nn.Parameter(torch.empty(c))
                if norm == "batch":
                    m.register_buffer("running_mean", torch.zeros(steps, c))
                    m.register_buffer("running_var", torch.ones(steps, c))
                self.add_module(f"{'bn' if norm == 'batch' else 'ln'}_{part}_l{k}", m)
        if norm == "batch":
            self.register_buffer("trained_steps", torch.zeros(()))

    def forward(self, x):
        F = torch.nn.functional
        seq, H = x.transpose(0, 1), self.hidden
        slots = self.bn_ih_l0.running_mean.shape[0] if self.norm == "batch" else 1
        last = min(max(int(self.trained_steps.item()) - 1, 0), slots - 1) if self.norm == "batch" else 0

        def norm(m, v, t):
            if self.norm == "layer":
                return F.layer_norm(v, (v.shape[-1],), m.weight, getattr(m, "bias", None), 1e-5)
            slot = min(t, last)
            return F.batch_norm(v, m.running_mean[slot], m.running_var[slot], m.weight, getattr(m, "bias", None),
                                False, 0.0, 1e-5)

        for k in range(self.layers):
            p = lambda part: getattr(self, f"{'bn' if self.norm == 'batch' else 'ln'}_{part}_l{k}")  # noqa: E731
            w_ih, w_hh, b = getattr(self, f"weight_ih_l{k}"), getattr(self, f"weight_hh_l{k}"), getattr(self, f"bias_l{k}")
            h = torch.zeros(seq.shape[1], H)
            c = torch.zeros(seq.shape[1], H)
            outs = []
            for t in range(seq.shape[0]):
                G = norm(p("ih"), seq[t] @ w_ih.t(), t) + norm(p("hh"), h @ w_hh.t(), t) + b
                i, f, g, o = G.chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(norm(p("c"), c, t))
                outs.append(h)
            seq = torch.stack(outs)
        return seq.transpose(0, 1)


class LastStep(torch.nn.Module):
    """(B, T, H) -> (B, H): output[:, -1]."""

    def forward(self, x):
        return x[:, -1]


# ---- normlab's character GPT (train --arch gpt --dataset text), nanoGPT's layout ----

class NewGELU(torch.nn.Module):
    """GELU in its tanh form (GPT-2's, normlab's nn::GELU):
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class HandRMSNorm(torch.nn.Module):
    """nn::RMSNorm as normlab builds it in a GPT: y = x / sqrt(mean(x^2) + eps) * weight over the last
    dim, eps=None, i.e. the machine epsilon of the input's dtype (1.19e-07 for float32), as
    PyTorch 2's torch.nn.RMSNorm (which PyTorch 1.13 lacks)."""

    def __init__(self, width):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))

    def forward(self, x):
        eps = torch.finfo(x.dtype).eps
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight


class TokenBatchNorm(torch.nn.BatchNorm1d):
    """BatchNorm1d over the tokens: x (B, T, C) viewed as (B T, C), normalized, viewed back."""

    def forward(self, x):
        b, t, c = x.shape
        return super().forward(x.reshape(b * t, c)).reshape(b, t, c)


def gpt_norm(norm, width):
    if norm == "layer":
        return torch.nn.LayerNorm(width, eps=1e-5)
    if norm == "rms":
        return HandRMSNorm(width)
    if norm == "batch":
        return TokenBatchNorm(width, eps=1e-5, momentum=0.1)
    if norm == "none":
        return torch.nn.Identity()
    raise SystemExit(f"unknown GPT norm {norm!r} (expected layer, rms, batch or none)")


class CausalSelfAttention(torch.nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.c_attn = torch.nn.Linear(width, 3 * width)
        self.c_proj = torch.nn.Linear(width, width)
        self.heads = heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class MLP(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = torch.nn.Linear(width, 4 * width)
        self.gelu = NewGELU()
        self.c_proj = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(torch.nn.Module):
    """Pre-norm (GPT-2): x + attn(ln_1(x)), then + mlp(ln_2(x)); post-norm: ln_1(x + attn(x)), ..."""

    def __init__(self, width, heads, norm, position):
        super().__init__()
        self.ln_1 = gpt_norm(norm, width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = gpt_norm(norm, width)
        self.mlp = MLP(width)
        self.pre = position == "pre"

    def forward(self, x):
        if self.pre:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))


class GPT(torch.nn.Module):
    """nanoGPT's GPT without the weight tying (normlab's lm_head has its own weight), no dropout."""

    def __init__(self, vocab, block_size, n_layer, n_head, width, norm, position):
        super().__init__()
        self.transformer = torch.nn.ModuleDict(dict(
            wte=torch.nn.Embedding(vocab, width),
            wpe=torch.nn.Embedding(block_size, width),
            h=torch.nn.ModuleList([Block(width, n_head, norm, position) for _ in range(n_layer)]),
            ln_f=gpt_norm(norm, width)))
        self.lm_head = torch.nn.Linear(width, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.transformer.wte(ids) + self.transformer.wpe(torch.arange(t))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def gpt_from_metadata(md):
    """The GPT a checkpoint's metadata describes, and the fixed ids examples/gpt_checkpoint.cc
    prints normlab's logits for: 2 sequences of min(block_size, 12) tokens,
    ids[r, t] = (7 t + 5 r + 3) mod V. The logits (2, T, V) are compared as 2 T rows."""
    v, block = int(md["vocab_size"]), int(md["block_size"])
    model = GPT(v, block, int(md["n_layer"]), int(md["n_head"]), int(md["width"]), md["norm"], md["position"])
    t = min(block, 12)
    ids = torch.tensor([[(7 * i + 5 * r + 3) % v for i in range(t)] for r in range(2)])
    return model, ids


def build_from_metadata(md):
    """The torch.nn.Sequential a normlab checkpoint describes (experiments/models/model.h's grammar)."""
    nn = torch.nn
    if md.get("arch") == "lstm":
        c, steps, width = (int(v) for v in md["image_shape"].split("x"))
        hidden = [int(v) for v in md["hidden"].split(",")]
        outputs = int(md["model"].split("-")[-1])
        return nn.Sequential(nn.Unflatten(1, (steps, width)),
                             OutputLSTM(width, hidden[0], len(hidden), batch_first=True) if md["norm"] == "none"
                             else NormalizedLSTM(md["norm"], width, hidden[0], len(hidden), steps),
                             LastStep(), nn.Linear(hidden[0], outputs)), c * steps * width
    acts = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": lambda: nn.GELU(approximate="tanh"), "sigmoid": nn.Sigmoid}
    norm, groups = md["norm"], int(md.get("norm.num_groups", "8"))

    def make_norm(shape):
        if norm == "none":
            return None
        if norm in ("batch", "syncbatch"):  # a SyncBatchNorm model predicts as BatchNorm (eval mode)
            return nn.BatchNorm2d(shape[0]) if len(shape) == 3 else nn.BatchNorm1d(shape[0])
        if norm == "layer":
            return nn.LayerNorm(list(shape))
        if norm == "group":
            return nn.GroupNorm(groups, shape[0])
        if norm == "instance":
            return nn.InstanceNorm2d(shape[0], affine=True)
        sys.exit(f"norm '{norm}': PyTorch 1.13 has no such layer")

    dims = md["model"].split("-")
    outputs = int(dims[-1])
    layers = []
    if md.get("arch", "mlp") == "mlp":
        widths = [int(d) for d in dims]
        shape = [widths[0]]
        tokens = [t for w in widths[1:-1] for t in (f"linear{w}", "norm", "act")]
    else:
        shape = [int(v) for v in md["image_shape"].split("x")]
        layers.append(nn.Unflatten(1, tuple(shape)))
        tokens = md["layers"].split("-")
    features = shape[0] if len(shape) == 1 else shape[0] * shape[1] * shape[2]
    for tok in tokens:
        m = re.fullmatch(r"(conv|maxpool|avgpool|linear)(\d+)(.*)", tok)
        kind, n, rest = (m.group(1), int(m.group(2)), m.group(3)) if m else (tok, 0, "")
        opts = {k: (int(a), int(b) if b else int(a)) for k, a, b in re.findall(r"([kspdg])(\d+)(?:x(\d+))?", rest)}
        if kind == "conv":
            k, s, p, d = opts.get("k", (3, 3)), opts.get("s", (1, 1)), opts.get("p", (0, 0)), opts.get("d", (1, 1))
            layers.append(nn.Conv2d(shape[0], n, k, stride=s, padding=p, dilation=d, groups=opts.get("g", (1, 1))[0]))
            shape = [n] + [(shape[1 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
        elif kind in ("maxpool", "avgpool"):
            s, p = opts.get("s", (n, n))[0], opts.get("p", (0, 0))[0]
            layers.append(nn.MaxPool2d(n, s, p) if kind == "maxpool" else nn.AvgPool2d(n, s, p))
            shape = [shape[0]] + [(shape[1 + i] + 2 * p - n) // s + 1 for i in range(2)]
        elif kind == "gap":
            layers.append(nn.AdaptiveAvgPool2d(1))
            shape = [shape[0], 1, 1]
        elif kind == "flatten":
            layers.append(nn.Flatten())
            shape = [shape[0] * shape[1] * shape[2]]
        elif kind == "linear":
            layers.append(nn.Linear(shape[0], n))
            shape = [n]
        elif kind == "norm":
            if make_norm(shape) is not None:
                layers.append(make_norm(shape))
        else:
            layers.append(acts[md["activation"] if kind == "act" else kind]())
    if len(shape) == 3:
        layers.append(nn.Flatten())
        shape = [shape[0] * shape[1] * shape[2]]
    layers.append(nn.Linear(shape[0], outputs))
    return nn.Sequential(*layers), features


def sine_rows(features):
    """x[r, j] = sin(0.01 (r F + j)), 3 rows (examples/cnn_checkpoint.cc computes the same)."""
    return torch.tensor([[math.sin(0.01 * (r * features + j)) for j in range(features)] for r in range(3)],
                        dtype=torch.float64).float()


# Both programs are float32: they round differently (summation order, SIMD kernels) and agree to
# about 2e-6 on these logits of magnitude up to ~7 (a few float32 ulps); 1e-5 leaves a 5x margin.
TOLERANCE = 1e-5


def predict_csv(md, model, path, comment=None, na_values=()):
    """Class probabilities (rows, classes) for the rows of a CSV file, preprocessed as in training."""
    names = json.loads(md["feature_names"])
    pre = json.loads(md["preprocessing"])
    with open(path, newline="") as f:
        lines = [l for l in f if l.strip() and not (comment and l.lstrip().startswith(comment))]
        rows = list(csv.DictReader(lines))
    # A model trained with --missing mean: an empty cell or an NA string becomes the recorded fill
    # (the float32 column mean, as normlab stores it before standardizing).
    na = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
          "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"} | set(na_values)
    fill = pre.get("fill")

    def value(cell, j):
        if fill is not None and cell.strip() in na:
            return fill[j]
        return float(torch.tensor(float(cell), dtype=torch.float32))  # normlab reads cells as float32

    # Each feature: (file column, None) for a number, (file column, category) for a one-hot feature
    # of a categorical column (--categorical): 1 for the row's category, else 0.
    specs = [(n, None) for n in names]
    if "categories" in md:
        cats = {col: values for col, values in json.loads(md["categories"])}
        specs = [(col, c) for col in json.loads(md["columns"]) for c in (cats[col] if col in cats else [None])]

    def feature(r, j):
        col, cat = specs[j]
        if cat is None:
            return value(r[col], j)
        if fill is not None and r[col].strip() in na:
            return fill[j]
        return 1.0 if r[col].strip() == cat else 0.0

    x = torch.tensor([[feature(r, j) for j in range(len(specs))] for r in rows], dtype=torch.float64)
    mean = torch.tensor(pre["mean"], dtype=torch.float64)
    std = torch.tensor(pre["std"], dtype=torch.float64)
    x = ((x - mean) / torch.where(std > 0, std, torch.ones_like(std))).float()
    with torch.no_grad():
        out = model(x)
    if md.get("task") == "regression":  # the model predicts (y - mean) / std
        target = json.loads(md["target"])
        return out.double() * target["std"] + target["mean"]
    return torch.softmax(out, dim=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default="spirals.safetensors", help="the checkpoint to load")
    ap.add_argument("--compare", metavar="LOGITS.txt", help="normlab's logits, to compare with")
    ap.add_argument("--from-metadata", action="store_true", help="rebuild the model from the checkpoint's metadata")
    ap.add_argument("--predict", metavar="DATA.csv", help="class probabilities for the rows of a CSV file")
    ap.add_argument("--compare-predictions", metavar="PREDS.csv", help="normlab predict's output, to compare with")
    ap.add_argument("--csv-comment", help="--predict: lines starting with this character are skipped")
    ap.add_argument("--csv-na", default="", help="--predict: more strings read as missing, comma-separated")
    args = ap.parse_args()
    if args.predict:
        md = read_metadata(args.path)
        model, _ = build_from_metadata(md)
        model.load_state_dict(read_safetensors(args.path), strict=True)
        model.eval()
        classes = json.loads(md["class_names"])
        probs = predict_csv(md, model, args.predict, args.csv_comment,
                            [v for v in args.csv_na.split(",") if v])
        if md.get("task") == "regression":
            print("predicted")
            for v in probs[:, 0].tolist():
                print(f"{v:.7g}")
            if args.compare_predictions:
                with open(args.compare_predictions, newline="") as f:
                    theirs = [float(r["predicted"]) for r in csv.DictReader(f)]
                if len(theirs) != probs.shape[0]:
                    sys.exit(f"{args.compare_predictions}: {len(theirs)} rows, PyTorch predicted {probs.shape[0]}")
                scale = json.loads(md["target"])["std"]
                diff = max(abs(p - t) for p, t in zip(probs[:, 0].tolist(), theirs)) / scale
                print(f"largest |PyTorch - normlab| prediction = {diff:.3g} target stds (tolerance {TOLERANCE:g})")
                if not diff <= TOLERANCE:
                    sys.exit(1)
            return
        print("predicted," + ",".join(f"p_{c}" for c in classes))
        for row in probs.tolist():
            print(classes[max(range(len(row)), key=row.__getitem__)] + "," + ",".join(f"{v:.7g}" for v in row))
        if args.compare_predictions:
            with open(args.compare_predictions, newline="") as f:
                theirs = list(csv.DictReader(f))
            if len(theirs) != probs.shape[0]:
                sys.exit(f"{args.compare_predictions}: {len(theirs)} rows, PyTorch predicted {probs.shape[0]}")
            diff = max(abs(probs[i, k].item() - float(r[f"p_{c}"])) for i, r in enumerate(theirs)
                       for k, c in enumerate(classes))
            same = sum(classes[int(probs[i].argmax())] == r["predicted"] for i, r in enumerate(theirs))
            print(f"largest |PyTorch - normlab| probability = {diff:.3g} (tolerance {TOLERANCE:g}); "
                  f"same predicted class on {same} of {len(theirs)} rows")
            if not (diff <= TOLERANCE and same == len(theirs)):
                sys.exit(1)
        return
    md = read_metadata(args.path) if args.from_metadata else {}
    if md.get("arch") == "gpt":
        model, x = gpt_from_metadata(md)
        what = "ids[r, t] = (7 t + 5 r + 3) mod V, one row per position"
    elif args.from_metadata:
        model, features = build_from_metadata(md)
        x, what = sine_rows(features), f"x[r, j] = sin(0.01 (r {features} + j))"
    else:
        model = torch.nn.Sequential(
            torch.nn.Linear(2, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(),
            torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(),
            torch.nn.Linear(64, 2))
        x = torch.tensor([[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]])  # as in examples/train_and_save.cc
        what = "x = [[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]]"
    state = {k: v for k, v in read_safetensors(args.path).items()}
    model.load_state_dict(state, strict=True)  # same names, same shapes
    model.eval()
    with torch.no_grad():
        logits = model(x)
    if md.get("arch") == "gpt":
        logits = logits.reshape(-1, logits.shape[-1])
    print(f"PyTorch's logits for {what}:")
    for row in logits.tolist():
        print(" ".join(f"{v:12.7f}" for v in row))
    if args.compare:
        with open(args.compare) as f:
            theirs = torch.tensor([[float(v) for v in line.split()] for line in f if line.strip()])
        if theirs.shape != logits.shape:
            sys.exit(f"{args.compare}: expected {list(logits.shape)} logits, got {list(theirs.shape)}")
        diff = (logits.double() - theirs.double()).abs().max().item()
        print(f"largest |PyTorch - normlab| = {diff:.3g} (tolerance {TOLERANCE:g})")
        if not diff <= TOLERANCE:
            sys.exit(1)


if __name__ == "__main__":
    main()

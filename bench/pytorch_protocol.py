#!/usr/bin/python3
"""The batch-size sweep protocol in PyTorch, as `normlab sweep` runs it (MLP, or with --arch cnn the
study's CNN, or with --arch lstm the row-sequential LSTM classifier).

Same data, model, optimizer, schedule and evaluation as normlab (experiments/run/trainer.cc, sweep.cc):
- Fashion-MNIST from Debian's dataset-fashion-mnist (the gzip IDX files), the first --train-limit
  training images and the full test set; pixels / 255 in float32, then standardized per pixel with
  the training set's mean and population std (float64; a constant pixel keeps std 1).
- MLP 784-256-256-10: Linear -> [BatchNorm1d | LayerNorm | GroupNorm(8)] -> ReLU in the hidden
  layers; or (--arch cnn) the study's CNN: conv3x3(1->32, padding 1) - norm - ReLU - maxpool 2 -
  conv3x3(32->64, padding 1) - norm - ReLU - maxpool 2 - flatten - Linear(3136, 10), the norm
  BatchNorm2d, LayerNorm([C, H, W]), GroupNorm(8, C) or InstanceNorm2d(C, affine=True); PyTorch's
  default initialization, seeded with torch.manual_seed(seed).
- SGD momentum 0.9, lr = --lr x batch / --reference-batch; linear warmup over --warmup steps
  (lr (t + 1) / warmup; --scaled-warmup: round(warmup x reference / batch) steps, as normlab's
  sweep since its scores became the last epoch's), then cosine to 0 over the remaining steps; the lr
  set before every step.
- Each epoch a fresh permutation, batches of B, the last partial batch dropped; the loss is read
  every step (a NaN or Inf loss stops the run as diverged) and the running training accuracy kept.
- After each evaluated epoch (the last --eval-last; normlab's sweep: 1): test loss and accuracy in
  eval mode in batches of --eval-batch; for BatchNorm in those epochs also precise BN (running stats reset and recomputed as a
  cumulative average over 10,000 shuffled training samples in batches of max(B, 200), then eval) and
  test-batch statistics (train-mode forward on test batches of B; buffers restored after both).
- Final accuracy = median over the evaluated epochs (--eval-last 1: the last epoch's).
Only the batch order and the initial weights' random streams differ from normlab's.

--arch lstm (protocol A, experiments/models/recurrent.cc): each standardized image as 28 steps of 28
pixels, one LSTM layer of 128 units (--hidden), Linear(128, 10) on the last hidden state; the cells
of bench/pytorch_seq.py: none nn.LSTM, layer the LayerNorm LSTM, batch the recurrent BatchNorm LSTM
with a BatchNorm per step, batch-shared one BatchNorm for every step (gains 0.1). The cells'
weight_ih, weight_hh and bias drawn U(-1/sqrt(H), 1/sqrt(H)) as normlab's (nn.LSTM's own init);
the LayerNorm LSTM's LN_ih and LN_hh have no shift in normlab (the bias b stands for it), so their
LayerNorm biases stay 0 and out of the optimizer. Adam (betas 0.9, 0.999, eps 1e-8, no weight
decay) with the total gradient norm clipped to --clip-grad-norm (1) before every step; lr = --lr x
sqrt(batch / --reference-batch) (--lr-scaling sqrt); the warmup --warmup steps at the reference
batch scaled to round(warmup x reference / batch) steps (--scaled-warmup, as normlab's sweep does);
the final accuracy is the last epoch's (--eval-last 1); precise BN and test-batch statistics for
batch and batch-shared (the shared BatchNorm's cumulative average runs over every step).

Prints one line per run and the totals per batch size to stderr, the accuracy table to stdout, and
writes every run (wall time, accuracies) as JSON to --out for bench/protocol.py.
"""
import argparse
import gzip
import math
import os
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol_runs  # noqa: E402  (--out, --resume, --shard)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist", help="the IDX files (dataset-fashion-mnist)")
    p.add_argument("--train-limit", type=int, default=20000, help="the first N training images (0: all)")
    p.add_argument("--batch-sizes", default="2,4,8,16,32,64,128,256")
    p.add_argument("--arch", default="mlp", choices=["mlp", "cnn", "lstm"], help="the MLP, the study's CNN or the LSTM")
    p.add_argument("--hidden", type=int, default=128, help="--arch lstm: the LSTM's width")
    p.add_argument("--lr-scaling", choices=["linear", "sqrt", "none"],
                   help="lr at batch b: linear --lr x b / reference, sqrt --lr x sqrt(b / reference), none --lr "
                        "(default: sqrt with --arch lstm, else linear)")
    p.add_argument("--scaled-warmup", action="store_true",
                   help="warmup round(--warmup x reference / batch) steps (default with --arch lstm)")
    p.add_argument("--clip-grad-norm", type=float, help="clip the total gradient norm (default: 1 with --arch lstm, else off)")
    p.add_argument("--norms", default="none,batch,layer")
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--lr", type=float, help="learning rate at --reference-batch (default: 0.001 with --arch lstm, else 0.05)")
    p.add_argument("--reference-batch", type=int, default=128)
    p.add_argument("--warmup", type=int, default=50, help="linear warmup steps")
    p.add_argument("--eval-batch", type=int, default=1000)
    p.add_argument("--eval-last", type=int, default=3,
                   help="evaluate the test set only after the last N epochs (0: every epoch)")
    p.add_argument("--precise-bn-samples", type=int, default=10000)
    p.add_argument("--threads", type=int, default=1)
    protocol_runs.add_arguments(p)
    a = p.parse_args()
    protocol_runs.parse_shard(p, a)
    try:
        a.batch_sizes = [int(b) for b in a.batch_sizes.split(",")]
        a.seeds = [int(s) for s in a.seeds.split(",")]
    except ValueError as e:
        p.error(f"--batch-sizes and --seeds are comma-separated whole numbers: {e}")
    a.norms = a.norms.split(",")
    lstm = a.arch == "lstm"
    if a.lr is None:
        a.lr = 0.001 if lstm else 0.05
    if a.lr_scaling is None:
        a.lr_scaling = "sqrt" if lstm else "linear"
    if a.clip_grad_norm is None:
        a.clip_grad_norm = 1.0 if lstm else 0.0
    a.scaled_warmup = a.scaled_warmup or lstm
    known = (("none", "layer", "batch", "batch-shared") if lstm else
             ("none", "batch", "layer", "group") + (("instance",) if a.arch == "cnn" else ()))
    for n in a.norms:
        if n not in known:
            p.error(f"unknown norm {n!r} for --arch {a.arch} (expected one of {', '.join(known)})")
    if a.threads < 1:
        p.error(f"--threads must be at least 1, got {a.threads}")
    if a.epochs < 1 or min(a.batch_sizes) < 1:
        p.error("epochs and batch sizes must be at least 1")
    return a


args = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # before torch loads OpenBLAS
os.environ["OMP_NUM_THREADS"] = str(args.threads)
try:
    import numpy as np
    import torch
except ImportError:
    print("pytorch_protocol.py: PyTorch is not installed: apt-get install python3-torch "
          "(and run this script with /usr/bin/python3)", file=sys.stderr)
    sys.exit(3)
torch.set_num_threads(args.threads)
if args.arch == "lstm":
    import pytorch_seq  # the LSTM cells of the speed bench


def read_idx(path, magic, dims):
    """The array of a gzip IDX file, after checking its magic number."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        sys.exit(f"pytorch_protocol.py: cannot read {path} ({e}): apt-get install dataset-fashion-mnist")
    got = struct.unpack(">I", raw[:4])[0]
    if got != magic:
        sys.exit(f"pytorch_protocol.py: {path}: magic number {got:#x}, expected {magic:#x}")
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load():
    d = args.data_dir
    xtr = read_idx(f"{d}/train-images-idx3-ubyte.gz", 2051, 3)
    ytr = read_idx(f"{d}/train-labels-idx1-ubyte.gz", 2049, 1)
    xte = read_idx(f"{d}/t10k-images-idx3-ubyte.gz", 2051, 3)
    yte = read_idx(f"{d}/t10k-labels-idx1-ubyte.gz", 2049, 1)
    if args.train_limit > 0:
        xtr, ytr = xtr[:args.train_limit], ytr[:args.train_limit]
    # float32 pixels / 255, then float64 statistics and standardization in chunks of rows (no
    # float64 copy of the whole set: the peak memory stays that of the float32 data).
    xtr = xtr.reshape(len(xtr), -1).astype(np.float32) / np.float32(255)
    xte = xte.reshape(len(xte), -1).astype(np.float32) / np.float32(255)
    chunks = lambda x: (x[i:i + 4096] for i in range(0, len(x), 4096))
    mean = sum(c.astype(np.float64).sum(0) for c in chunks(xtr)) / len(xtr)
    var = sum(((c.astype(np.float64) - mean) ** 2).sum(0) for c in chunks(xtr)) / len(xtr)
    std = np.sqrt(var)
    inv = np.where(std > 0, 1 / np.where(std > 0, std, 1), 1.0)
    for x in (xtr, xte):
        for c in chunks(x):
            c[...] = (c.astype(np.float64) - mean) * inv
    return (torch.from_numpy(xtr), torch.from_numpy(ytr.astype(np.int64)),
            torch.from_numpy(xte), torch.from_numpy(yte.astype(np.int64)))


def norm2d(kind, c, hw):
    nn = torch.nn
    return {"batch": lambda: nn.BatchNorm2d(c), "layer": lambda: nn.LayerNorm([c, hw, hw]),
            "group": lambda: nn.GroupNorm(8, c), "instance": lambda: nn.InstanceNorm2d(c, affine=True),
            "none": lambda: nn.Identity()}[kind]()


class RowSequence(torch.nn.Module):
    """(B, 784) standardized pixels -> (B, 28, 28) rows -> an LSTM classifier's logits."""

    def __init__(self, norm):
        super().__init__()
        self.net = pytorch_seq.LstmClassifier(norm, args.hidden)
        rnn = getattr(self.net, "rnn", None) or self.net.cell
        if norm != "none":  # normlab's init of its cells: U(-1/sqrt(H), 1/sqrt(H)), as nn.LSTM's
            bound = 1 / math.sqrt(args.hidden)
            with torch.no_grad():
                for p in (rnn.ih.weight, rnn.hh.weight, rnn.bias):
                    p.uniform_(-bound, bound)
        if norm == "layer":  # LN_ih and LN_hh have no shift: b stands for it
            rnn.ln_ih.bias.requires_grad_(False)
            rnn.ln_hh.bias.requires_grad_(False)

    def forward(self, x):
        return self.net(x.view(x.shape[0], 28, 28))


def build(norm, seed):
    torch.manual_seed(seed)
    if args.arch == "lstm":
        return RowSequence(norm)
    if args.arch == "cnn":
        nn = torch.nn
        return nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                             nn.Conv2d(1, 32, 3, padding=1), norm2d(norm, 32, 28), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), norm2d(norm, 64, 14), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(3136, 10))
    layers, width = [], 784
    for h in (256, 256):
        layers.append(torch.nn.Linear(width, h))
        if norm == "batch":
            layers.append(torch.nn.BatchNorm1d(h))
        elif norm == "layer":
            layers.append(torch.nn.LayerNorm(h))
        elif norm == "group":
            layers.append(torch.nn.GroupNorm(8, h))
        layers.append(torch.nn.ReLU())
        width = h
    layers.append(torch.nn.Linear(width, 10))
    return torch.nn.Sequential(*layers)


def lr_at(lr, t, total, warmup):
    """normlab's lr_at: linear warmup, then cosine to 0 over the remaining steps."""
    if t < warmup:
        return lr * (t + 1) / warmup
    rest = max(1, total - warmup)
    return 0.5 * lr * (1 + math.cos(math.pi * (t - warmup) / rest))


@torch.no_grad()
def evaluate(model, x, y, batch):
    model.eval()
    loss, correct = 0.0, 0
    for i in range(0, len(x), batch):
        logits = model(x[i:i + batch])
        loss += torch.nn.functional.cross_entropy(logits, y[i:i + batch], reduction="sum").item()
        correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return loss / len(x), correct / len(x)


def bns(model):
    return [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]


@torch.no_grad()
def precise_bn_accuracy(model, xtr, xte, yte, batch, seed):
    saved = [b.clone() for b in model.buffers()]
    for bn in bns(model):
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average
    model.train()
    b = min(max(batch, 200), len(xtr))
    perm = torch.randperm(len(xtr), generator=torch.Generator().manual_seed(seed + 7919))
    seen = 0
    for i in range(0, len(xtr) - b + 1, b):
        if seen >= args.precise_bn_samples:
            break
        model(xtr[perm[i:i + b]])
        seen += b
    acc = evaluate(model, xte, yte, args.eval_batch)[1]
    for bn in bns(model):
        bn.momentum = 0.1
    for buf, s in zip(model.buffers(), saved):
        buf.copy_(s)
    return acc


@torch.no_grad()
def batch_stats_accuracy(model, xte, yte, batch):
    saved = [b.clone() for b in model.buffers()]
    model.train()
    correct = seen = 0
    for i in range(0, len(xte), batch):
        xb = xte[i:i + batch]
        if len(xb) < 2:
            continue
        correct += (model(xb).argmax(1) == yte[i:i + batch]).sum().item()
        seen += len(xb)
    for buf, s in zip(model.buffers(), saved):
        buf.copy_(s)
    return correct / seen if seen else float("nan")


def train_run(norm, batch, seed, data):
    xtr, ytr, xte, yte = data
    t0, c0 = time.perf_counter(), time.process_time()
    model = build(norm, seed).train()
    ratio = batch / args.reference_batch
    lr = args.lr * {"linear": ratio, "sqrt": math.sqrt(ratio), "none": 1.0}[args.lr_scaling]
    warmup = args.warmup
    if args.scaled_warmup and warmup > 0:  # the same samples at every batch size (normlab's scaled_warmup)
        warmup = max(1, math.floor(warmup * args.reference_batch / batch + 0.5))
    params = [p for p in model.parameters() if p.requires_grad]
    if args.arch == "lstm":
        opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    per_epoch = len(xtr) // batch
    total = args.epochs * per_epoch
    step, diverged, epochs = 0, False, []
    data_seconds_total = eval_seconds = bn_eval_seconds = 0.0
    step_seconds = data_seconds = 0.0  # steps: the epochs' loops without the batch gathering
    for epoch in range(1, args.epochs + 1):
        te = time.perf_counter()
        perm = torch.randperm(len(xtr), generator=gen)
        loss_sum, correct = 0.0, 0
        for b in range(per_epoch):
            td = time.perf_counter()
            idx = perm[b * batch:(b + 1) * batch]
            xb, yb = xtr[idx], ytr[idx]
            data_seconds += time.perf_counter() - td
            for g in opt.param_groups:
                g["lr"] = lr_at(lr, step, total, warmup)
            logits = model(xb)
            loss = torch.nn.functional.cross_entropy(logits, yb)
            lv = loss.item()
            if not math.isfinite(lv):
                diverged = True
                break
            opt.zero_grad()
            loss.backward()
            if args.clip_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(params, args.clip_grad_norm)
            opt.step()
            correct += (logits.argmax(1) == yb).sum().item()
            loss_sum += lv * batch
            step += 1
        step_seconds += time.perf_counter() - te - data_seconds
        data_seconds_total += data_seconds
        data_seconds = 0.0
        if diverged:
            break
        e = {"epoch": epoch, "train_loss": loss_sum / (per_epoch * batch), "train_acc": correct / (per_epoch * batch),
             "test_acc": float("nan"), "test_acc_precise": float("nan"), "test_acc_batch": float("nan")}
        te = time.perf_counter()
        if args.eval_last == 0 or epoch > args.epochs - args.eval_last:
            e["test_loss"], e["test_acc"] = evaluate(model, xte, yte, args.eval_batch)
            if not math.isfinite(e["test_loss"]):
                diverged = True
        eval_seconds += time.perf_counter() - te
        last = args.eval_last if args.eval_last > 0 else 3
        if norm.startswith("batch") and epoch + last > args.epochs and not diverged:
            te = time.perf_counter()
            e["test_acc_precise"] = precise_bn_accuracy(model, xtr, xte, yte, batch, seed)
            e["test_acc_batch"] = batch_stats_accuracy(model, xte, yte, batch)
            bn_eval_seconds += time.perf_counter() - te
        epochs.append(e)

    def final(key):
        v = [e[key] for e in epochs[-(args.eval_last if args.eval_last > 0 else 3):] if math.isfinite(e[key])]
        return float("nan") if diverged or not v else statistics.median(v)

    return {"norm": norm, "batch_size": batch, "seed": seed, "lr": lr, "diverged": diverged,
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "step_seconds": step_seconds,
            "data_seconds": data_seconds_total, "eval_seconds": eval_seconds, "bn_eval_seconds": bn_eval_seconds,
            "final_test_acc": final("test_acc"), "final_test_acc_precise": final("test_acc_precise"),
            "final_test_acc_batch": final("test_acc_batch")}


def main():
    data = load()
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} thread(s); {len(data[0])} train / "
          f"{len(data[2])} test images", file=sys.stderr)
    log = protocol_runs.RunFile(args.out, args.resume, {"torch": torch.__version__, "threads": torch.get_num_threads()}, args)
    index = 0
    for norm in args.norms:
        for batch in args.batch_sizes:
            for seed in args.seeds:
                index += 1
                if log.skip(index - 1, norm, batch, seed):
                    continue
                r = train_run(norm, batch, seed, data)
                log.add(r)
                extra = (f" (precise BN {100 * r['final_test_acc_precise']:.2f}%, test-batch stats "
                         f"{100 * r['final_test_acc_batch']:.2f}%)" if norm.startswith("batch") else "")
                print(f"pytorch: norm {norm}, batch {batch}, seed {seed}: {r['seconds']:.2f} s "
                      f"(steps {r['step_seconds']:.2f} s), test accuracy {100 * r['final_test_acc']:.2f}%{extra}",
                      file=sys.stderr, flush=True)
    log.write()
    print(f"pytorch: total {log.wall():.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The character GPT's batch-size sweep (protocol B) in PyTorch, as `normlab sweep --dataset text
--arch gpt --over batch` runs it (experiments/studies/lm_sweep.cc, lm_train.cc, data/text.cc):

- Corpus: Debian's fortunes, the 43 files of data::default_corpus_files() in that order, each read as
  UTF-8 (a leading byte-order mark dropped), a "\\n" added when the file does not end with one, then
  "%\\n" when it does not end with a "%" line; concatenated. Split contiguously: the last round(0.1 N)
  characters validate, the rest train; the vocabulary is the training split's characters sorted by
  code point, validation characters outside it left out.
- Model: bench/pytorch_seq.py's Gpt (nanoGPT's layout: wte + wpe, blocks of attention and MLP with
  the GELU in its tanh form, ln_f, lm_head without bias and untied), --layers, --heads, --width,
  --block-size; the norm of every ln_1, ln_2 and ln_f: layer (LayerNorm, eps 1e-5), rms (RMSNorm, eps
  float32's machine epsilon), batch (BatchNorm1d over the B x T tokens), none; "-post" variants
  post-norm. nanoGPT's init (N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 n_layer)), biases 0).
- Training: steps = round(--train-tokens / (batch x block)) (at least 1); each step B windows of
  block + 1 characters at uniform random starts of the training split; AdamW lr --lr (3e-3, the same
  at every batch size), betas 0.9, 0.95, eps 1e-8, weight decay 0.1 on the parameters of 2 or more
  dims (Linear weights, embeddings) and 0 on the others; linear warmup over int(0.1 steps) steps
  (lr (t + 1) / warmup), then cosine to 0; the total gradient norm clipped to 1 before every step.
- Validation: the mean cross-entropy over the non-overlapping windows k T (k < (N_val - 1) / T) of
  the validation split, in batches of the run's batch size, in eval mode, in bits per character;
  for BatchNorm also in training mode (each batch normalized with its own statistics; the running
  statistics restored afterwards).
Only the random streams (initial weights, window starts) differ from normlab's.

Prints one line per run to stderr and writes every run as JSON to --out for bench/protocol.py.
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol_runs  # noqa: E402  (--out, --resume, --shard)

CORPUS_FILES = ["art", "ascii-art", "computers", "cookie", "debian", "definitions", "disclaimer", "drugs",
                "education", "ethnic", "food", "fortunes", "goedel", "humorists", "kids", "knghtbrd", "law", "linux",
                "linuxcookie", "literature", "love", "magic", "medicine", "men-women", "miscellaneous", "news",
                "paradoxum", "people", "perl", "pets", "platitudes", "politics", "pratchett", "riddles", "science",
                "songs-poems", "sports", "startrek", "tao", "translate-me", "wisdom", "work", "zippy"]
VARIANTS = ("layer", "layer-post", "rms", "rms-post", "batch", "batch-post", "none")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fortunes-dir", default="/usr/share/games/fortunes", help="the fortune files (Debian's fortunes)")
    p.add_argument("--batch-sizes", default="1,2,4,16,64", help="batch sizes in sequences")
    p.add_argument("--norms", default="layer,layer-post,rms,batch,none", help="GPT variants: " + ", ".join(VARIANTS))
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--train-tokens", type=int, default=2048000, help="training tokens of every run")
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--val-fraction", type=float, default=0.1)
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
    for n in a.norms:
        if n not in VARIANTS:
            p.error(f"unknown GPT variant {n!r} (expected one of {', '.join(VARIANTS)})")
    if min(a.batch_sizes) < 1 or a.train_tokens < 1 or a.block_size < 1 or a.threads < 1:
        p.error("batch sizes, --train-tokens, --block-size and --threads must be at least 1")
    if a.width % a.heads:
        p.error(f"--heads {a.heads} must divide --width {a.width}")
    return a


args = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # before torch loads OpenBLAS
os.environ["OMP_NUM_THREADS"] = str(args.threads)
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("pytorch_lm_protocol.py: PyTorch is not installed: apt-get install python3-torch "
          "(and run this script with /usr/bin/python3)", file=sys.stderr)
    sys.exit(3)
torch.set_num_threads(args.threads)
import pytorch_seq  # noqa: E402  (the GPT of the speed bench)


def read_corpus():
    """data::read_default_corpus: the files in order, each ending with a '%' line."""
    text = []
    for name in CORPUS_FILES:
        path = os.path.join(args.fortunes_dir, name)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            sys.exit(f"pytorch_lm_protocol.py: {path}: {e.strerror}; apt-get install fortunes")
        part = raw.decode("utf-8")  # strict, as normlab's decoder
        if part.startswith("\ufeff"):
            part = part[1:]
        if not part.endswith("\n"):
            part += "\n"
        if len(part) < 3 or not part.endswith("\n%\n"):
            part += "%\n"
        text.append(part)
    return "".join(text)


def split(text):
    """data::make_text_corpus: contiguous split, the training split's vocabulary, unknown validation characters skipped."""
    n_val = math.floor(args.val_fraction * len(text) + 0.5)
    train_text, val_text = text[:len(text) - n_val], text[len(text) - n_val:]
    vocab = sorted(set(train_text))
    ids = {c: i for i, c in enumerate(vocab)}
    train = torch.tensor([ids[c] for c in train_text], dtype=torch.long)
    val = torch.tensor([ids[c] for c in val_text if c in ids], dtype=torch.long)
    return vocab, train, val


def build(variant, vocab_size, seed):
    torch.manual_seed(seed)
    norm, post = variant.removesuffix("-post"), variant.endswith("-post")
    return pytorch_seq.Gpt(norm, vocab=vocab_size, block=args.block_size, layers=args.layers, width=args.width,
                           heads=args.heads, post=post, gelu="tanh").nanogpt_init()


def lr_at(t, total, warmup):
    """Linear warmup, then cosine to 0 over the remaining steps (normlab's schedule_of)."""
    if t < warmup:
        return args.lr * (t + 1) / warmup
    return 0.5 * args.lr * (1 + math.cos(math.pi * (t - warmup) / max(1, total - warmup)))


@torch.no_grad()
def window_loss(model, ids, batch):
    """Mean cross-entropy (nats) over the non-overlapping windows of ids, in batches of `batch` windows."""
    t = args.block_size
    w = (len(ids) - 1) // t
    total, count = 0.0, 0
    for first in range(0, w, batch):
        k = min(batch, w - first)
        starts = torch.arange(first, first + k) * t
        idx = starts[:, None] + torch.arange(t + 1)[None, :]
        win = ids[idx]
        logits = model(win[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), win[:, 1:].reshape(-1),
                                 reduction="sum").item()
        count += k * t
    return total / count


def train_run(variant, batch, seed, vocab, train, val):
    t0, c0 = time.perf_counter(), time.process_time()
    model = build(variant, len(vocab), seed).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    t = args.block_size
    steps = max(1, math.floor(args.train_tokens / (batch * t) + 0.5))
    warmup = int(steps * 0.1)
    gen = torch.Generator().manual_seed(seed)
    offsets = torch.arange(t + 1)[None, :]
    diverged, step_seconds = False, 0.0
    for s in range(steps):
        ts = time.perf_counter()
        starts = torch.randint(0, len(train) - t, (batch,), generator=gen)
        win = train[starts[:, None] + offsets]
        for g in opt.param_groups:
            g["lr"] = lr_at(s, steps, warmup)
        logits = model(win[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), win[:, 1:].reshape(-1))
        if not math.isfinite(loss.item()):
            diverged = True
            break
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step_seconds += time.perf_counter() - ts
    te = time.perf_counter()
    bits = lambda nats: nats / math.log(2)
    val_bits = val_bits_train = float("nan")
    if not diverged:
        model.eval()
        val_bits = bits(window_loss(model, val, batch))
        if variant.startswith("batch"):
            saved = {k: v.clone() for k, v in model.state_dict().items()}
            model.train()
            val_bits_train = bits(window_loss(model, val, batch))
            model.load_state_dict(saved)
        diverged = not math.isfinite(val_bits)
    return {"norm": variant, "batch_size": batch, "seed": seed, "steps": steps, "warmup": warmup,
            "tokens": steps * batch * t, "diverged": diverged, "val_bits_per_char": val_bits,
            "val_bits_per_char_train_mode": val_bits_train, "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0, "step_seconds": step_seconds,
            "eval_seconds": time.perf_counter() - te}


def main():
    vocab, train, val = split(read_corpus())
    params = sum(p.numel() for p in build(args.norms[0], len(vocab), 0).parameters())
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} thread(s); fortunes: {len(train)} train / "
          f"{len(val)} validation characters, vocabulary {len(vocab)}; GPT {args.layers} layers, {args.heads} heads, "
          f"width {args.width}, block {args.block_size}: {params} parameters ({args.norms[0]})", file=sys.stderr)
    log = protocol_runs.RunFile(args.out, args.resume, {"torch": torch.__version__, "threads": torch.get_num_threads(),
                                          "vocabulary": len(vocab), "train_characters": len(train),
                                          "validation_characters": len(val)}, args)
    index = 0
    for variant in args.norms:
        for batch in args.batch_sizes:
            for seed in args.seeds:
                index += 1
                if log.skip(index - 1, variant, batch, seed):
                    continue
                r = train_run(variant, batch, seed, vocab, train, val)
                log.add(r)
                extra = (f" (train mode {r['val_bits_per_char_train_mode']:.3f})"
                         if math.isfinite(r["val_bits_per_char_train_mode"]) else "")
                print(f"pytorch: norm {variant}, batch {batch}, seed {seed}: {r['steps']} steps, validation "
                      f"{r['val_bits_per_char']:.3f} bits/char{extra}, {r['seconds']:.2f} s", file=sys.stderr, flush=True)
    log.write()
    print(f"pytorch: total {log.wall():.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The sequence-model workloads of bench/pytorch_bench.py, in PyTorch 1.13 (the same names, shapes and
update rules as normlab's side of the table):

- "train step lstm 28x28 h128 b{2,32} {none,layer,batch}": one training step of the row-sequential
  Fashion-MNIST classifier (28 steps of 28 pixels, hidden 128, the last hidden state to a Linear of 10
  classes): forward, cross-entropy, zero_grad, backward, clip_grad_norm_(1.0), Adam. none is
  nn.LSTM; layer is the LayerNorm LSTM of Ba, Kiros and Hinton (2016) and batch the recurrent
  BatchNorm LSTM of Cooijmans et al. (2016, statistics per time step), each a Python cell looped over
  the steps, as a PyTorch user writes them (PyTorch has neither).
- "train step gpt L4 C128 H4 T64 b16 {none,layer,rms,batch}": one AdamW step with clipping of a
  nanoGPT-style model (4 pre-norm blocks, width 128, 4 heads, block 64, vocabulary 96) on a batch of 16.
- "attention causal b16 h4 d32 T{64,256} forward+backward": PyTorch 1.13 has no fused CPU attention,
  so this is the formula softmax(q k^T / sqrt(d) masked) v and its backward.
- "generate gpt L4 C128 kv-cache 64 tokens": 64 tokens sampled one at a time at batch 1 with a
  key/value cache.

Work is counted in flops: a step's GEMM and attention flops (forward, and twice that for the
backward); the attention formula's full T x T products, masked or not.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LSTM_IN, LSTM_T, LSTM_H, CLASSES = 28, 28, 128, 10
GPT_L, GPT_C, GPT_H, GPT_T, GPT_B, GPT_V = 4, 128, 4, 64, 16, 96


class LayerNormLSTMCell(nn.Module):
    """(i, f, g, o) = LN(W_x x) + LN(W_h h) + b; c = σ(f) c + σ(i) tanh(g); h = σ(o) tanh(LN(c))."""

    def __init__(self, i, h):
        super().__init__()
        self.ih = nn.Linear(i, 4 * h, bias=False)
        self.hh = nn.Linear(h, 4 * h, bias=False)
        self.bias = nn.Parameter(torch.zeros(4 * h))
        self.ln_ih, self.ln_hh, self.ln_c = nn.LayerNorm(4 * h), nn.LayerNorm(4 * h), nn.LayerNorm(h)

    def forward(self, x, state):
        h, c = state
        gi, gf, gg, go = (self.ln_ih(self.ih(x)) + self.ln_hh(self.hh(h)) + self.bias).chunk(4, 1)
        c = torch.sigmoid(gf) * c + torch.sigmoid(gi) * torch.tanh(gg)
        return torch.sigmoid(go) * torch.tanh(self.ln_c(c)), c


class BatchNormLSTM(nn.Module):
    """Cooijmans et al.: BN(W_x x; γ_x, 0) + BN(W_h h; γ_h, 0) + b, h = σ(o) tanh(BN(c; γ_c, β_c)), a
    separate BatchNorm (statistics) per time step, γ initialised to 0.1; shared=True: one BatchNorm
    (one set of running statistics) for every step, normlab's batch-shared. Step t uses BatchNorm
    min(t, steps - 1)."""

    def __init__(self, i, h, steps, shared=False):
        super().__init__()
        steps = 1 if shared else steps
        self.ih = nn.Linear(i, 4 * h, bias=False)
        self.hh = nn.Linear(h, 4 * h, bias=False)
        self.bias = nn.Parameter(torch.zeros(4 * h))
        self.g_ih, self.g_hh = nn.Parameter(torch.full((4 * h,), 0.1)), nn.Parameter(torch.full((4 * h,), 0.1))
        self.g_c, self.b_c = nn.Parameter(torch.full((h,), 0.1)), nn.Parameter(torch.zeros(h))
        self.bn_ih = nn.ModuleList(nn.BatchNorm1d(4 * h, affine=False) for _ in range(steps))
        self.bn_hh = nn.ModuleList(nn.BatchNorm1d(4 * h, affine=False) for _ in range(steps))
        self.bn_c = nn.ModuleList(nn.BatchNorm1d(h, affine=False) for _ in range(steps))
        self.hidden = h

    def forward(self, x):  # x (B, T, I) -> last h (B, H)
        b = x.shape[0]
        h = x.new_zeros(b, self.hidden)
        c = x.new_zeros(b, self.hidden)
        wx = self.ih(x)  # all steps' input projections in one GEMM
        for t in range(x.shape[1]):
            s = min(t, len(self.bn_c) - 1)
            g = self.bn_ih[s](wx[:, t]) * self.g_ih + self.bn_hh[s](self.hh(h)) * self.g_hh + self.bias
            gi, gf, gg, go = g.chunk(4, 1)
            c = torch.sigmoid(gf) * c + torch.sigmoid(gi) * torch.tanh(gg)
            h = torch.sigmoid(go) * torch.tanh(self.bn_c[s](c) * self.g_c + self.b_c)
        return h


class LstmClassifier(nn.Module):
    """x (B, T, I) -> the last hidden state's logits; norm none (nn.LSTM), layer, batch or batch-shared."""

    def __init__(self, norm, hidden=LSTM_H):
        super().__init__()
        self.norm, self.hidden = norm, hidden
        if norm == "none":
            self.rnn = nn.LSTM(LSTM_IN, hidden, batch_first=True)
        elif norm == "layer":
            self.cell = LayerNormLSTMCell(LSTM_IN, hidden)
        elif norm in ("batch", "batch-shared"):
            self.rnn = BatchNormLSTM(LSTM_IN, hidden, LSTM_T, shared=norm == "batch-shared")
        else:
            raise ValueError(f"LstmClassifier: unknown norm {norm!r} (none, layer, batch or batch-shared)")
        self.head = nn.Linear(hidden, CLASSES)

    def forward(self, x):  # (B, T, I) -> logits (B, 10)
        if self.norm == "none":
            return self.head(self.rnn(x)[0][:, -1])
        if self.norm != "layer":
            return self.head(self.rnn(x))
        h = x.new_zeros(x.shape[0], self.hidden)
        c = torch.zeros_like(h)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return self.head(h)


class RMSNorm(nn.Module):
    def __init__(self, c, eps=torch.finfo(torch.float32).eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(c)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class TokenBatchNorm(nn.Module):
    """BatchNorm1d over the B x T tokens of (B, T, C), per feature."""

    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm1d(c)

    def forward(self, x):
        return self.bn(x.reshape(-1, x.shape[-1])).reshape(x.shape)


def make_norm(kind, c):
    if kind == "none":
        return nn.Identity()
    return {"layer": nn.LayerNorm, "rms": RMSNorm, "batch": TokenBatchNorm}[kind](c)


class Block(nn.Module):
    """nanoGPT's pre-norm block: x + attn(ln_1(x)), then x + mlp(ln_2(x)); post=True: the original
    Transformer's x = ln_1(x + attn(x)), then x = ln_2(x + mlp(x)). gelu: F.gelu's approximate ("none"
    is the erf form, "tanh" GPT-2's and normlab's)."""

    def __init__(self, norm, width=GPT_C, heads=GPT_H, post=False, gelu="none"):
        super().__init__()
        self.heads, self.post, self.gelu = heads, post, gelu
        self.ln_1, self.ln_2 = make_norm(norm, width), make_norm(norm, width)
        self.c_attn, self.attn_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.c_fc, self.mlp_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def attention(self, x, cache=None):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:  # generation: append this step's keys and values
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        y = attention_formula(q, k, v, causal=cache is None)
        return self.attn_proj(y.transpose(1, 2).reshape(b, t, c))

    def mlp(self, x):
        return self.mlp_proj(F.gelu(self.c_fc(x), approximate=self.gelu))

    def forward(self, x, cache=None):
        if self.post:
            x = self.ln_1(x + self.attention(x, cache))
            return self.ln_2(x + self.mlp(x))
        x = x + self.attention(self.ln_1(x), cache)
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    """wte + wpe, the blocks, ln_f (the blocks' norm, under either position), lm_head (no bias, untied)."""

    def __init__(self, norm, vocab=GPT_V, block=GPT_T, layers=GPT_L, width=GPT_C, heads=GPT_H, post=False,
                 gelu="none"):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(block, width)
        self.blocks = nn.ModuleList(Block(norm, width, heads, post, gelu) for _ in range(layers))
        self.ln_f = make_norm(norm, width)
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def nanogpt_init(self):
        """nanoGPT's _init_weights (normlab's GPT init): Linear weights and embeddings N(0, 0.02), biases
        0, the residual projections N(0, 0.02 / sqrt(2 n_layer)); norms keep weight 1, bias 0."""
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    m.weight.normal_(0.0, 0.02)
                    if getattr(m, "bias", None) is not None:
                        m.bias.zero_()
            for b in self.blocks:
                for proj in (b.attn_proj, b.mlp_proj):
                    proj.weight.normal_(0.0, 0.02 / math.sqrt(2 * len(self.blocks)))
        return self

    def forward(self, idx, caches=None, start=0):
        x = self.wte(idx) + self.wpe(torch.arange(start, start + idx.shape[1]))
        for i, block in enumerate(self.blocks):
            x = block(x, caches[i] if caches is not None else None)
        return self.lm_head(self.ln_f(x))


def attention_formula(q, k, v, causal):
    """softmax(q k^T / sqrt(d) + mask) v on (B, H, T, D)."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        t = q.shape[-2]
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def lstm_step_flops(batch):
    fwd = 2.0 * batch * LSTM_T * 4 * LSTM_H * (LSTM_IN + LSTM_H) + 2.0 * batch * LSTM_H * CLASSES
    return 3 * fwd


def gpt_step_flops():
    n = GPT_B * GPT_T
    per_layer = 2.0 * n * GPT_C * (3 * GPT_C + GPT_C + 8 * GPT_C) + 4.0 * GPT_B * GPT_T * GPT_T * GPT_C
    return 3 * (GPT_L * per_layer + 2.0 * n * GPT_C * GPT_V)


def seq_workloads(g):
    def lstm_step(batch, norm):
        def setup():
            torch.manual_seed(0)
            model = LstmClassifier(norm).train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            x = torch.rand(batch, LSTM_T, LSTM_IN, generator=g)
            y = torch.randint(0, CLASSES, (batch,), generator=g)

            def step():
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
            return step, lstm_step_flops(batch), "flop"
        return setup

    def gpt_step(norm):
        def setup():
            torch.manual_seed(0)
            model = Gpt(norm).train()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
            x = torch.randint(0, GPT_V, (GPT_B, GPT_T), generator=g)
            y = torch.randint(0, GPT_V, (GPT_B, GPT_T), generator=g)

            def step():
                loss = F.cross_entropy(model(x).view(-1, GPT_V), y.view(-1))
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
            return step, gpt_step_flops(), "flop"
        return setup

    def attention(t):
        b, h, d = 16, 4, 32

        def setup():
            q, k, v = (torch.randn(b, h, t, d, generator=g).requires_grad_() for _ in range(3))
            dy = torch.randn(b, h, t, d, generator=g)

            def step():
                y = attention_formula(q, k, v, causal=True)
                torch.autograd.grad(y, (q, k, v), dy)
            return step, 12.0 * b * h * t * t * d, "flop"
        return setup

    def generate(tokens=64):
        def setup():
            torch.manual_seed(0)
            model = Gpt("layer").eval()
            gen = torch.Generator().manual_seed(0)

            def run():
                with torch.no_grad():
                    caches = [dict() for _ in range(GPT_L)]
                    idx = torch.zeros(1, 1, dtype=torch.long)
                    for pos in range(tokens):
                        logits = model(idx, caches, start=pos)[:, -1] / 0.8
                        top = torch.topk(logits, 10)
                        logits[logits < top.values[:, -1:]] = float("-inf")
                        idx = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)
            return run, float(tokens), "token"
        return setup

    out = []
    for batch in (2, 32):
        for norm in ("none", "layer", "batch"):
            out.append((f"train step lstm 28x28 h128 b{batch} {norm}", lstm_step(batch, norm)))
    for norm in ("none", "layer", "rms", "batch"):
        out.append((f"train step gpt L4 C128 H4 T64 b16 {norm}", gpt_step(norm)))
    for t in (64, 256):
        out.append((f"attention causal b16 h4 d32 T{t} forward+backward", attention(t)))
    out.append(("generate gpt L4 C128 kv-cache 64 tokens", generate()))
    return out

"""A user's Python program against an installed normlab (the package under
<prefix>/lib/python3/dist-packages: found by Debian's python3 when the prefix is /usr, as the .deb
installs it, else with PYTHONPATH=<prefix>/lib/python3/dist-packages): trains an MLP with LayerNorm
on two spirals with Adam, printing the loss as it drops, and gradchecks a custom op written with
normlab's ops. Exits 1 when the loss does not drop or a gradcheck gives the wrong verdict."""
import sys

import numpy as np

import normlab
from normlab import nn, optim


def spirals(n, noise, seed):
    """Two interleaved spirals of n points each, as (x (2n, 2) float32, labels (2n,))."""
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0, 1, n)) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], 1) / (3 * np.pi)
    x = np.concatenate([arm, -arm]) + rng.normal(0, noise, (2 * n, 2))
    return x.astype(np.float32), np.repeat([0, 1], n)


def rms_norm(x, g, eps=1e-5):
    """A custom op from normlab's ops: y = g x / sqrt(mean(x^2) + eps) over the last dim."""
    return x / ((x * x).mean(dim=-1, keepdim=True) + eps).sqrt() * g


def train():
    x, y = spirals(128, 0.05, 0)
    normlab.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 32), nn.LayerNorm(32),
                          nn.ReLU(), nn.Linear(32, 2))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(60):
        loss = normlab.cross_entropy(model(normlab.tensor(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 20 == 0 or step == 59:
            print(f"step {step:2d}  loss {loss.item():.4f}")
    return losses[-1] < 0.5 * losses[0]


def gradchecks():
    rng = np.random.default_rng(1)
    x = normlab.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    g = normlab.tensor(rng.normal(size=4), requires_grad=True)
    good = normlab.autograd.gradcheck(rms_norm, [x, g])
    try:  # a wrong gradient (the denominator detached) must be caught
        normlab.autograd.gradcheck(lambda a, b: a / ((a * a).mean(dim=-1, keepdim=True) + 1e-5).sqrt().detach() * b,
                                   [x, g])
        caught = False
    except RuntimeError:
        caught = True
    print(f"gradcheck of rms_norm: {good}; of a wrong gradient: caught {caught}")
    return good and caught


if __name__ == "__main__":
    ok = train() & gradchecks()
    print("normlab", normlab.__file__)
    sys.exit(0 if ok else 1)

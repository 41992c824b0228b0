"""normlab against PyTorch through Python, where Debian's python3-torch is installed (skipped
otherwise): the same weights (a torch state_dict loaded with load_state_dict) give the same outputs,
gradients and optimizer steps, for an MLP with LayerNorm and BatchNorm, a CNN and an LSTM."""
import numpy as np
import pytest

import normlab
from normlab import nn, optim

torch = pytest.importorskip("torch")


def load_from_torch(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def mlp_pair(norm):
    torch.manual_seed(0)
    t_norm = torch.nn.LayerNorm(8) if norm == "layer" else torch.nn.BatchNorm1d(8)
    # No bias before BatchNorm: its gradient is zero up to rounding, which Adam would scale up into
    # steps of either sign.
    bias = norm == "layer"
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8, bias=bias), t_norm, torch.nn.ReLU(), torch.nn.Linear(8, 3))
    ours = nn.Sequential(nn.Linear(4, 8, bias=bias), nn.LayerNorm(8) if norm == "layer" else nn.BatchNorm1d(8),
                         nn.ReLU(), nn.Linear(8, 3))
    load_from_torch(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("norm", ["layer", "batch"])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW"])
def test_an_mlp_trains_as_in_pytorch(norm, opt_name):
    ours, theirs = mlp_pair(norm)
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9), "Adam": dict(lr=0.01), "AdamW": dict(lr=0.01)}[opt_name]
    o_opt = getattr(optim, opt_name)(ours.parameters(), **kwargs)
    t_opt = getattr(torch.optim, opt_name)(theirs.parameters(), **kwargs)
    rng = np.random.default_rng(0)
    for step in range(5):
        x = rng.normal(size=(16, 4)).astype(np.float32)
        y = rng.integers(0, 3, size=16)
        o_opt.zero_grad()
        t_opt.zero_grad()
        o_loss = normlab.cross_entropy(ours(normlab.tensor(x)), y)
        t_loss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y))
        o_loss.backward()
        t_loss.backward()
        assert o_loss.item() == pytest.approx(t_loss.item(), rel=1e-5, abs=1e-6)
        if step == 0:
            for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
        o_opt.step()
        t_opt.step()
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k], v.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)


def test_a_cnn_matches_pytorch_in_train_and_eval():
    torch.manual_seed(1)
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                 torch.nn.MaxPool2d(2), torch.nn.GroupNorm(2, 4), torch.nn.Flatten(),
                                 torch.nn.Linear(64, 3))
    ours = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.GroupNorm(2, 4), nn.Flatten(), nn.Linear(64, 3))
    load_from_torch(ours, theirs)
    x = np.random.default_rng(1).normal(size=(5, 2, 8, 8)).astype(np.float32)
    for mode in ("train", "eval"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        np.testing.assert_allclose(ours(normlab.tensor(x)).detach().numpy(),
                                   theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_an_lstm_matches_pytorch():
    torch.manual_seed(2)
    theirs = torch.nn.LSTM(3, 5, num_layers=2, batch_first=True)
    ours = nn.LSTM(3, 5, num_layers=2, batch_first=True)
    load_from_torch(ours, theirs)
    x = np.random.default_rng(2).normal(size=(4, 6, 3)).astype(np.float32)
    o_out, (o_h, o_c) = ours(normlab.tensor(x))
    t_out, (t_h, t_c) = theirs(torch.from_numpy(x))
    for a, b in ((o_out, t_out), (o_h, t_h), (o_c, t_c)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch.optim.lr_scheduler.SequentialLR warns of its own step(epoch)
def test_the_schedules_give_pytorchs_learning_rates():
    p = normlab.tensor([1.0], requires_grad=True)
    q = torch.nn.Parameter(torch.ones(1))
    o_opt, t_opt = optim.SGD([p], lr=0.1), torch.optim.SGD([q], lr=0.1)
    o = optim.lr_scheduler.SequentialLR(o_opt, [optim.lr_scheduler.LinearLR(o_opt, 0.1, total_iters=3),
                                                optim.lr_scheduler.CosineAnnealingLR(o_opt, T_max=5)], [3])
    t = torch.optim.lr_scheduler.SequentialLR(t_opt, [torch.optim.lr_scheduler.LinearLR(t_opt, 0.1, total_iters=3),
                                                      torch.optim.lr_scheduler.CosineAnnealingLR(t_opt, T_max=5)], [3])
    for _ in range(8):
        assert o_opt.param_groups[0]["lr"] == pytest.approx(t_opt.param_groups[0]["lr"], rel=1e-9)
        o_opt.step()
        t_opt.step()
        o.step()
        t.step()


def test_indexing_matches_pytorch():
    # The keys of test_indexing.py and the int-and-array case where PyTorch and NumPy differ: the
    # same values, shapes and input gradients as torch's indexing.
    from test_indexing import A, KEYS
    keys = KEYS + [(0, slice(None), np.array([[0, 1], [3, 3]])), (slice(None), 1, [3, 1, 0])]
    for key in keys:
        tkey = tuple(torch.from_numpy(k) if isinstance(k, np.ndarray) and k.ndim > 0 else k
                     for k in (key if isinstance(key, tuple) else (key,)))
        theirs = torch.tensor(A, requires_grad=True)
        ours = normlab.tensor(A, requires_grad=True)
        t_out, o_out = theirs[tkey if isinstance(key, tuple) else tkey[0]], ours[key]
        assert o_out.shape == tuple(t_out.shape), key
        np.testing.assert_array_equal(o_out.detach().numpy(), t_out.detach().numpy())
        if t_out.numel() == 0:
            continue
        w = np.random.default_rng(2).standard_normal(tuple(t_out.shape))
        (t_out * torch.from_numpy(w)).sum().backward()
        (o_out * normlab.tensor(w)).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=0, atol=1e-12)

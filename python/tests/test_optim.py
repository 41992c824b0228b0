"""normlab.optim from Python: SGD, Adam and AdamW against their update rules written out in NumPy,
param_groups' lr, state_dict round trips (a resumed optimizer continues bit for bit), the schedules,
and the argument errors."""
import numpy as np
import pytest

import normlab
from normlab import nn, optim
from normlab.optim import lr_scheduler


def quadratic_grad(p, target):
    """Sets p.grad to the gradient of sum((p - target)^2) / 2 = p - target by backward."""
    p.grad = None
    (((p - normlab.tensor(target, dtype=p.dtype)) ** 2).sum() * 0.5).backward()


def test_sgd_with_momentum_and_weight_decay_follows_pytorchs_rule():
    w0 = np.array([1.0, -2.0, 3.0])
    target = np.array([0.5, 0.5, 0.5])
    p = normlab.tensor(w0, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
    w, buf = w0.copy(), None
    for _ in range(5):
        quadratic_grad(p, target)
        opt.step()
        g = (w - target) + 0.01 * w
        buf = g if buf is None else 0.9 * buf + g
        w = w - 0.1 * (g + 0.9 * buf)
    np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-12)


@pytest.mark.parametrize("cls,decoupled", [(optim.Adam, False), (optim.AdamW, True)])
def test_adam_and_adamw_follow_their_update_rules(cls, decoupled):
    w0 = np.array([1.0, -2.0, 3.0])
    target = np.zeros(3)
    p = normlab.tensor(w0, requires_grad=True)
    wd = 0.1
    opt = cls([p], lr=0.01, betas=(0.8, 0.99), eps=1e-8, weight_decay=wd)
    w, m, v = w0.copy(), np.zeros(3), np.zeros(3)
    for t in range(1, 6):
        quadratic_grad(p, target)
        opt.step()
        g = w - target
        if decoupled:
            w = w * (1 - 0.01 * wd)
        else:
            g = g + wd * w
        m = 0.8 * m + 0.2 * g
        v = 0.99 * v + 0.01 * g * g
        mhat, vhat = m / (1 - 0.8 ** t), v / (1 - 0.99 ** t)
        w = w - 0.01 * mhat / (np.sqrt(vhat) + 1e-8)
    np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-10)


def test_param_groups_lr_sets_the_learning_rate():
    p = normlab.tensor([1.0], dtype="float64", requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    opt.param_groups[0]["lr"] = 0.25
    assert opt.param_groups[0]["lr"] == 0.25
    quadratic_grad(p, np.array([0.0]))
    opt.step()
    assert p.item() == pytest.approx(0.75)
    with pytest.raises(ValueError, match="lr"):
        opt.param_groups[0]["lr"] = -1


def test_a_resumed_optimizer_continues_bit_for_bit():
    normlab.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    x = normlab.tensor(np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32))

    def step(m, o):
        o.zero_grad()
        (m(x) ** 2).mean().backward()
        o.step()

    opt = optim.AdamW(model.parameters(), lr=0.01, amsgrad=True)
    for _ in range(3):
        step(model, opt)
    model_sd, opt_sd = model.state_dict(), opt.state_dict()
    assert set(opt_sd["state"][0]) >= {"exp_avg", "exp_avg_sq"}
    assert opt_sd["param_groups"][0]["params"] == [0, 1, 2, 3]
    for _ in range(2):
        step(model, opt)

    normlab.manual_seed(99)
    twin = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    twin.load_state_dict(model_sd)
    twin_opt = optim.AdamW(twin.parameters(), lr=0.01, amsgrad=True)
    twin_opt.load_state_dict(opt_sd)
    for _ in range(2):
        step(twin, twin_opt)
    for k, v in twin.state_dict().items():
        np.testing.assert_array_equal(v, model.state_dict()[k])
    with pytest.raises(RuntimeError):
        optim.SGD(twin.parameters(), lr=0.1).load_state_dict(opt_sd)  # Adam's state into SGD


def test_the_schedules():
    p = normlab.tensor([1.0], requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        lrs.append(sched.get_last_lr()[0])
        sched.step()
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25]

    opt = optim.SGD([p], lr=0.1)
    warm = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=2)
    cos = lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    seq = lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[2])
    lrs = []
    for _ in range(7):
        lrs.append(opt.param_groups[0]["lr"])
        seq.step()
    expected = [0.01, 0.055] + [0.1 * (1 + np.cos(np.pi * t / 4)) / 2 for t in range(5)]
    np.testing.assert_allclose(lrs, expected, rtol=1e-12)
    with pytest.raises(ValueError, match="StepLR"):
        lr_scheduler.StepLR(opt, step_size=0)


def test_optimizer_argument_errors():
    p = normlab.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="parameter 1 is a int"):
        optim.Adam([p, 3])
    with pytest.raises(ValueError):
        optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError):
        optim.Adam([p], betas=(1.5, 0.9))
    with pytest.raises(ValueError, match="parameter groups"):
        optim.SGD([{"params": [p]}], lr=0.1)

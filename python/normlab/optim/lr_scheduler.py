"""normlab.optim.lr_scheduler: StepLR, CosineAnnealingLR, LinearLR and SequentialLR with torch's
arguments; step() after each optimizer.step() (or epoch) moves the optimizer's lr along the schedule,
computed in closed form from the optimizer's initial lr (normlab::optim::LRScheduler)."""
from .._normlab import _optim

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR", "LinearLR", "SequentialLR"]


class LRScheduler:
    """Applies a schedule (t, base_lr -> lr) to an optimizer: the lr of step 0 at once, then one step
    per step() call."""

    def __init__(self, optimizer, schedule):
        self.optimizer = optimizer
        self._schedule = schedule
        optimizer._native.lr = optimizer.initial_lr  # the schedule starts from the optimizer's own lr
        self._native = _optim.LRScheduler(optimizer._native, schedule)

    def step(self):
        self._native.step()

    def get_last_lr(self):
        return [self.optimizer._native.lr]

    @property
    def last_epoch(self):
        return self._native.last_step

    @property
    def base_lrs(self):
        return [self._native.base_lr]

    def state_dict(self):
        return {"last_epoch": self.last_epoch, "base_lrs": self.base_lrs}

    def load_state_dict(self, state_dict):
        self._native.set_step(int(state_dict["last_epoch"]))

    def __repr__(self):
        return f"{type(self).__name__}({self._schedule!r})"


def _make(who, fn, *args):
    try:
        return fn(*args)
    except RuntimeError as e:
        message = str(e)
        raise ValueError(message if message.startswith(who) else f"{who}: {message}") from None


class StepLR(LRScheduler):
    """lr = initial_lr * gamma^floor(t / step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1):
        super().__init__(optimizer, _make("StepLR", _optim.step_lr, step_size, gamma))


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) (1 + cos(pi t / T_max)) / 2."""

    def __init__(self, optimizer, T_max, eta_min=0.0):
        super().__init__(optimizer, _make("CosineAnnealingLR", _optim.cosine_annealing_lr, T_max, eta_min))


class LinearLR(LRScheduler):
    """lr = initial_lr * (start + (end - start) min(t, total_iters) / total_iters)."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        super().__init__(optimizer, _make("LinearLR", _optim.linear_lr, start_factor, end_factor, total_iters))


class SequentialLR(LRScheduler):
    """schedulers[0] until milestones[0], then schedulers[1] started afresh, and so on."""

    def __init__(self, optimizer, schedulers, milestones):
        schedulers, milestones = list(schedulers), list(milestones)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("SequentialLR: expected one milestone fewer than schedulers, got "
                             f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        if any(s.optimizer is not optimizer for s in schedulers):
            raise ValueError("SequentialLR: every scheduler must be of the optimizer given")
        schedule = schedulers[-1]._schedule
        # Nested from the last: chain(s_0, chain(s_1, ..., m_1 - m_0), m_0).
        for i in range(len(schedulers) - 2, -1, -1):
            offset = milestones[i] - (milestones[i - 1] if i > 0 else 0)
            schedule = _make("SequentialLR", _optim.chain, schedulers[i]._schedule, schedule, offset)
        super().__init__(optimizer, schedule)

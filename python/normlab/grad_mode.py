"""Grad mode for a block or a function: no_grad and enable_grad (torch's context managers)."""
import functools

from ._normlab import is_grad_enabled, set_grad_enabled

__all__ = ["no_grad", "enable_grad"]


class _GradMode:
    """Sets grad mode for a `with` block (or a decorated function) and puts the previous one back."""

    def __init__(self, mode):
        self._mode = mode
        self._prev = []

    def __enter__(self):
        self._prev.append(is_grad_enabled())
        set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        set_grad_enabled(self._prev.pop())
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with type(self)():
                return func(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """No graph is recorded inside the block (torch.no_grad): `with normlab.no_grad(): ...`."""

    def __init__(self):
        super().__init__(False)


class enable_grad(_GradMode):
    """Grad mode on inside the block, even within no_grad (torch.enable_grad)."""

    def __init__(self):
        super().__init__(True)

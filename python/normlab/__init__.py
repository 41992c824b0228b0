"""normlab from Python: tensors with NumPy in and out, PyTorch's op names and broadcasting, and
reverse-mode autograd, on normlab's C++ core (the extension module normlab._normlab).

    import numpy as np, normlab
    x = normlab.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad.numpy()        # array([[2., 4.], [6., 8.]])

Tensors are float32 or float64 (float64 arrays stay float64; other arrays become float32).
normlab.tensor, normlab.from_numpy and Tensor.numpy() copy the values.
"""
import functools

from ._normlab import (Tensor, arange, cross_entropy, exp, float32, float64, from_numpy, is_grad_enabled,
                       layer_norm, log, log_softmax, matmul, mse_loss, ones, relu, set_grad_enabled, sigmoid,
                       softmax, tanh, tensor, zeros)
from . import autograd

__all__ = ["Tensor", "tensor", "from_numpy", "zeros", "ones", "arange", "matmul", "exp", "log", "relu", "tanh",
           "sigmoid", "softmax", "log_softmax", "cross_entropy", "mse_loss", "layer_norm", "float32", "float64",
           "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "autograd"]


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


Tensor.T = property(lambda self: self.transpose(0, 1) if self.ndim == 2 else self,
                    doc="The transpose of a 2-D tensor (the tensor itself below 2-D).")

"""normlab from Python: tensors with NumPy in and out, PyTorch's op names and broadcasting,
reverse-mode autograd, modules (normlab.nn) and optimizers (normlab.optim), on normlab's C++ core
(the extension module normlab._normlab).

    import numpy as np, normlab
    x = normlab.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad.numpy()        # array([[2., 4.], [6., 8.]])

Tensors are float32 or float64 (float64 arrays stay float64; other arrays become float32).
normlab.tensor copies the values; normlab.from_numpy and Tensor.numpy() share them, as in PyTorch
(from_numpy copies an array it cannot share: read-only, not C-contiguous, or not float32/float64).
"""
from ._normlab import (Tensor, arange, cross_entropy, exp, float32, float64, from_numpy, get_num_threads,
                       is_grad_enabled, layer_norm, log, log_softmax, manual_seed, matmul, mse_loss, ones, relu,
                       set_grad_enabled, set_num_threads, sigmoid, softmax, tanh, tensor, zeros)
from . import autograd
from .grad_mode import enable_grad, no_grad
from .safetensors import load_file, save_file
from . import distributed, experiments, nn, optim

__all__ = ["Tensor", "tensor", "from_numpy", "zeros", "ones", "arange", "matmul", "exp", "log", "relu", "tanh",
           "sigmoid", "softmax", "log_softmax", "cross_entropy", "mse_loss", "layer_norm", "float32", "float64",
           "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "autograd", "manual_seed",
           "set_num_threads", "get_num_threads", "save_file", "load_file", "nn", "optim", "experiments",
           "distributed"]


Tensor.T = property(lambda self: self.transpose(0, 1) if self.ndim == 2 else self,
                    doc="The transpose of a 2-D tensor (the tensor itself below 2-D).")

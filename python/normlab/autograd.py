"""normlab.autograd: gradients without touching .grad (grad) and finite-difference checks of the first
and second derivatives (gradcheck, gradgradcheck), as torch.autograd's."""
from ._normlab import grad as _grad, gradcheck as _gradcheck, gradgradcheck as _gradgradcheck

__all__ = ["grad", "gradcheck", "gradgradcheck"]


def _as_list(x):
    return [x] if x is None or hasattr(x, "shape") else list(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False):
    """The gradients of sum(<grad_outputs[i], outputs[i]>) with respect to each input, as a tuple;
    no .grad changes. grad_outputs may be left out for one-element outputs."""
    outs, ins = _as_list(outputs), _as_list(inputs)
    gos = [] if grad_outputs is None else _as_list(grad_outputs)
    return tuple(_grad(outs, ins, gos, retain_graph, create_graph))


def gradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Checks func's analytic gradients against central differences for every float64 input that
    requires grad; True, or a RuntimeError naming the input and element that differ."""
    return _gradcheck(lambda *xs: func(*xs), list(_as_list(inputs)), eps, atol, rtol)


def gradgradcheck(func, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Checks func's second derivatives, as torch.autograd.gradgradcheck: the vector-Jacobian
    product grad(func(inputs), inputs, v, create_graph=True) is itself gradchecked against central
    differences, with respect to the inputs and v (grad_outputs; None: a float64 normal draw from
    the generator normlab.manual_seed seeds). True, or a RuntimeError naming what differs."""
    return _gradgradcheck(lambda *xs: func(*xs), list(_as_list(inputs)), grad_outputs, eps, atol, rtol)

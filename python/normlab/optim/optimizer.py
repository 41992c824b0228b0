"""normlab.optim's optimizers (torch.optim's SGD, Adam and AdamW, one parameter group): step() and
the update run in C++ (normlab._normlab._optim), in place on the parameters' values; zero_grad(),
param_groups[0]["lr"], and state_dict() / load_state_dict() in torch.optim's layout
({"state": {i: {name: array}}, "param_groups": [{hyper-parameters, "params": [0, 1, ...]}]})."""
import numpy as np

from .._normlab import Tensor, _optim, tensor
from ..grad_mode import enable_grad

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class _ParamGroup(dict):
    """param_groups[0]: writing "lr" sets the optimizer's learning rate (as schedules in PyTorch do)."""

    def __init__(self, optimizer, params, defaults):
        super().__init__(defaults)
        dict.__setitem__(self, "params", params)
        self._optimizer = optimizer

    def __getitem__(self, key):
        if key == "lr":
            return self._optimizer._native.lr
        return dict.__getitem__(self, key)

    def __setitem__(self, key, value):
        if key == "lr":
            try:
                self._optimizer._native.lr = float(value)
            except RuntimeError as e:
                raise ValueError(str(e)) from None
        dict.__setitem__(self, key, value)


def _param_list(who, params):
    if isinstance(params, Tensor):
        raise TypeError(f"{who}: params argument given to the optimizer should be an iterable of Tensors, "
                        "but got a Tensor")
    params = list(params)
    if not params:
        raise ValueError(f"{who}: optimizer got an empty parameter list")
    if any(isinstance(p, dict) for p in params):
        raise ValueError(f"{who}: parameter groups (dicts of options) are not supported: give one list of parameters")
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{who}: optimizer can only optimize Tensors, but parameter {i} is a {type(p).__name__}")
    return params


class Optimizer:
    """The base: the C++ optimizer, its parameters and one parameter group."""

    def __init__(self, who, make, params, defaults):
        params = _param_list(who, params)
        try:
            self._native = make(params, **defaults)
        except RuntimeError as e:
            raise ValueError(str(e)) from None
        self.defaults = dict(defaults)
        self.initial_lr = self._native.lr
        self.param_groups = [_ParamGroup(self, params, defaults)]

    def step(self, closure=None):
        """Updates every parameter that has a gradient; closure() (re-evaluating the loss, with grad
        mode on) runs first when given, and its value is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._native.step()
        return loss

    def zero_grad(self, set_to_none=True):
        """Clears every parameter's gradient (zeros it with set_to_none=False)."""
        if set_to_none:
            self._native.zero_grad()
            return
        for p in self.param_groups[0]["params"]:
            if p.grad is not None:
                p.grad.zero_()

    def state_dict(self):
        tensors, scalars = self._native.state()
        state = {}
        for name, t in tensors:
            kind, _, index = name.rpartition(".")
            state.setdefault(int(index), {})[kind] = t.numpy()
        group = dict(scalars)
        group["params"] = list(range(len(self.param_groups[0]["params"])))
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict):
        """Restores a state_dict() of an optimizer of the same kind over parameters of the same
        shapes; everything is checked first (a RuntimeError saying what differs, the optimizer unchanged)."""
        try:
            groups = state_dict["param_groups"]
            state = state_dict["state"]
        except (KeyError, TypeError):
            raise ValueError("expected a state_dict of an optimizer: a dict with \"state\" and \"param_groups\"") from None
        if len(groups) != 1:
            raise ValueError(f"loaded state dict has {len(groups)} parameter groups, this optimizer has 1")
        params = self.param_groups[0]["params"]
        tensors = []
        for index, entries in state.items():
            for kind, value in entries.items():
                i = int(index)
                dtype = params[i].dtype if 0 <= i < len(params) else None
                tensors.append((f"{kind}.{i}", value if isinstance(value, Tensor) else tensor(np.asarray(value), dtype=dtype)))
        scalars = {k: float(v) for k, v in groups[0].items() if k != "params"}
        self._native.load_state(tensors, scalars)

    def __repr__(self):
        lines = [f"{type(self).__name__} (", "Parameter Group 0"]
        for k in sorted(self.defaults):
            lines.append(f"    {k}: {self.param_groups[0][k]}")
        return "\n".join(lines) + "\n)"


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (torch.optim.SGD)."""

    def __init__(self, params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
        super().__init__("SGD", _optim.sgd, params,
                         dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                              nesterov=nesterov, maximize=maximize))


class Adam(Optimizer):
    """Adam (Kingma & Ba) with L2 weight decay and AMSGrad (torch.optim.Adam)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False):
        super().__init__("Adam", _optim.adam, params,
                         dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                              maximize=maximize))


class AdamW(Optimizer):
    """AdamW (Loshchilov & Hutter): decoupled weight decay, 1e-2 by default (torch.optim.AdamW)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 maximize=False):
        super().__init__("AdamW", _optim.adamw, params,
                         dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                              maximize=maximize))

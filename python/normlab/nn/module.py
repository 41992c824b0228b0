"""normlab.nn.Module and normlab.nn.Parameter, as torch.nn's: a module holds parameters, buffers and
child modules by attribute name; parameters(), named_parameters(), buffers(), state_dict() (a dict of
NumPy arrays), load_state_dict(), train()/eval(), zero_grad(), to()/float()/double() and forward hooks
walk the tree. Subclass Module and write forward(), as in PyTorch; the layers of normlab.nn are
Modules whose forward runs in C++."""
from collections import OrderedDict, namedtuple

import numpy as np

from .._normlab import Tensor, _convert_, tensor
from ..grad_mode import no_grad

__all__ = ["Module", "Parameter"]


class Parameter(Tensor):
    """A tensor that is a module's parameter: assigned as a Module attribute it is registered (and
    listed by parameters()); requires grad unless told otherwise. Parameter(t) shares t's values."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = tensor([])
        base = data.detach() if isinstance(data, Tensor) else tensor(data)
        Tensor.__init__(self, base)
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _shape_of(value):
    return tuple(value.shape) if isinstance(value, Tensor) else tuple(np.shape(value))


def _values_like(value, target, name):
    """value (a Tensor, an array or a nested list) as a tensor of target's dtype, for copy_."""
    if isinstance(value, Tensor):
        return value.detach().to(target.dtype)
    array = np.asarray(value)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"state_dict entry {name!r}: expected numbers, got an array of dtype {array.dtype}")
    return tensor(array, dtype=target.dtype)


class Module:
    """The base of every module (torch.nn.Module). Subclasses call super().__init__() first, then
    assign Parameters, Modules and buffers (register_buffer) as attributes, and define forward()."""

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_next_hook"] = 0

    # ---- attributes -----------------------------------------------------------------------
    def _registry(self, key, what):
        reg = self.__dict__.get(key)
        if reg is None:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")
        return reg

    def _forget(self, name):
        for key in ("_parameters", "_buffers", "_modules"):
            self.__dict__[key].pop(name, None)
        self.__dict__["_non_persistent"].discard(name)
        self.__dict__.pop(name, None)

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter):
            self._registry("_parameters", "parameters")
            self._forget(name)
            d["_parameters"][name] = value
        elif isinstance(value, Module):
            self._registry("_modules", "module")
            self._forget(name)
            d["_modules"][name] = value
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(normlab.nn.Parameter or None expected)")
            d["_parameters"][name] = None
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(normlab.nn.Module or None expected)")
            d["_modules"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(normlab.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            reg = d.get(key)
            if reg is not None and name in reg:
                return reg[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        if any(name in d.get(key, ()) for key in ("_parameters", "_buffers", "_modules")):
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Adds param (a Parameter, or None) under name."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(normlab.nn.Parameter or None required)")
        self._check_name(name, "parameter")
        self._forget(name)
        self._registry("_parameters", "parameters")[name] = param

    def register_buffer(self, name, tensor_, persistent=True):
        """Adds a buffer (state saved in state_dict but not trained, such as running statistics)."""
        if tensor_ is not None and not isinstance(tensor_, Tensor):
            raise TypeError(f"cannot assign '{type(tensor_).__name__}' object to buffer '{name}' "
                            "(normlab.Tensor or None required)")
        self._check_name(name, "buffer")
        self._forget(name)
        self._registry("_buffers", "buffers")[name] = tensor_
        if not persistent:
            self.__dict__["_non_persistent"].add(name)

    def add_module(self, name, module):
        """Adds a child module under name (register_module is the same)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._forget(name)
        self._registry("_modules", "module")[name] = module

    register_module = add_module

    def _check_name(self, name, what):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"{what} name can't be empty or contain \".\", got: {name!r}")

    # ---- calling ----------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    def __call__(self, *args, **kwargs):
        out = self.forward(*args, **kwargs)
        for hook in list(self.__dict__["_forward_hooks"].values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    def register_forward_hook(self, hook):
        """hook(module, inputs, output) runs after every call; a value it returns replaces the
        output. Returns a handle whose remove() takes the hook away."""
        d = self.__dict__
        key = d["_next_hook"]
        d["_next_hook"] = key + 1
        d["_forward_hooks"][key] = hook
        return _HookHandle(d["_forward_hooks"], key)

    # ---- the tree ---------------------------------------------------------------------------
    def named_children(self):
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self.named_children():
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    # The module's own tensors (not its children's): overridden by the C++ layers (layers.py).
    def _own_parameters(self):
        return [(n, p) for n, p in self._parameters.items() if p is not None]

    def _own_buffers(self, persistent_only=False):
        skip = self._non_persistent if persistent_only else ()
        return [(n, b) for n, b in self._buffers.items() if b is not None and n not in skip]

    def _named(self, own, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, t in own(m):
                if t._id() in seen:
                    continue
                seen.add(t._id())
                yield (mprefix + "." if mprefix else "") + name, t

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, parameter) pairs; a parameter shared by two modules is listed once."""
        return self._named(lambda m: m._own_parameters(), prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named(lambda m: m._own_buffers(), prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state ------------------------------------------------------------------------------
    def _state_items(self):
        """The module's own state_dict entries, in PyTorch's order: parameters, then persistent buffers."""
        return self._own_parameters() + self._own_buffers(persistent_only=True)

    def _collect_state(self, out, prefix):
        for name, t in self._state_items():
            out[prefix + name] = t
        for name, m in self.named_children():
            m._collect_state(out, prefix + name + ".")

    def state_dict(self, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer by dotted name, in PyTorch's order,
        as NumPy arrays (copies; num_batches_tracked as int64, as PyTorch stores it), or with
        keep_vars=True the tensors themselves."""
        tensors = OrderedDict()
        self._collect_state(tensors, prefix)
        if keep_vars:
            return tensors
        out = OrderedDict()
        for name, t in tensors.items():
            a = t.detach().numpy()  # shares the tensor's memory: copied below
            out[name] = a.astype(np.int64) if name.endswith("num_batches_tracked") else a.copy()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies the values of state_dict (name -> array or Tensor, such as state_dict() or
        normlab.load_file returns) into the module's parameters and buffers, converting each to the
        tensor's dtype. Everything is checked first (with strict, no key missing and none unexpected;
        every shape equal): on any error a RuntimeError lists them all and the module is unchanged.
        Returns (missing_keys, unexpected_keys)."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict.keys() if k not in own]
        errors = []
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if strict and missing:
            errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        staged = []
        for name, target in own.items():
            if name not in state_dict:
                continue
            value = state_dict[name]
            shape = _shape_of(value)
            if shape != tuple(target.shape):
                errors.append(f"size mismatch for {name}: copying a param with shape {list(shape)} from checkpoint, "
                              f"the shape in current model is {list(target.shape)}.")
                continue
            staged.append((target, _values_like(value, target, name)))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for target, values in staged:
                target.copy_(values)
        return _IncompatibleKeys(missing, unexpected)

    # ---- modes and dtypes -------------------------------------------------------------------
    def train(self, mode=True):
        """Training mode (BatchNorm uses batch statistics, Dropout drops) for the module and its children."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.__dict__["training"] = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        """Evaluation mode: train(False)."""
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        """Clears every parameter's gradient (or sets it to zeros with set_to_none=False)."""
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def _convert(self, dtype):
        for _, t in self._own_parameters() + self._own_buffers():
            _convert_(t, dtype)

    def to(self, dtype):
        """Every parameter, buffer and gradient converted to dtype in place (an optimizer made
        before sees the new dtype). Returns self."""
        for m in self.modules():
            m._convert(dtype)
        return self

    def float(self):
        return self.to("float32")

    def double(self):
        return self.to("float64")

    def apply(self, fn):
        """fn(module) on every child, then on the module itself. Returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- printing ---------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            lines.append(f"({name}): " + repr(m).replace("\n", "\n  "))
        main = type(self).__name__ + "("
        if len(lines) == 1 and not self._modules:
            return main + lines[0] + ")"
        if lines:
            main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


class _HookHandle:
    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)

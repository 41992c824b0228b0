"""Sequential and ModuleList (torch.nn's): modules in order, named "0", "1", ... so that state_dict
names read "0.weight", "1.running_mean"; any Module may be a child, the C++ layers and Python ones."""
from collections import OrderedDict

from .module import Module

__all__ = ["Sequential", "ModuleList"]


class Sequential(Module):
    """Sequential(m0, m1, ...) or Sequential(OrderedDict(name=module)): x -> m_{n-1}(... m_0(x))."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def _index(self, i):
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range")
        return i % n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[self._index(i)]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules registered as children (it has no forward)."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ModuleList(list(self._modules.values())[i])
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range")
        return list(self._modules.values())[i % n]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

"""normlab.nn: modules with torch.nn's names (Module, Parameter, the C++ layers, Sequential, the
losses) and safetensors files of their state."""
from .container import ModuleList, Sequential
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers
from .loss import CrossEntropyLoss, MSELoss
from .module import Module, Parameter

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "CrossEntropyLoss", "MSELoss"] + _layers

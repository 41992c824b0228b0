"""safetensors files from Python, as the safetensors package's save_file / load_file: the format of
the command's checkpoints (model.safetensors holds a module's state_dict), readable by PyTorch users.

    normlab.save_file(model.state_dict(), "model.safetensors")
    model.load_state_dict(normlab.load_file("model.safetensors"))
"""
import os

import numpy as np

from ._normlab import Tensor, _nn, tensor

__all__ = ["save_file", "load_file"]


def save_file(tensors, filename, metadata=None):
    """Writes tensors (a dict name -> Tensor or NumPy array: float32 as F32, float64 as F64; a name
    ending in num_batches_tracked as I64) and metadata (a dict of strings) to filename, atomically:
    the file holds the old contents or the complete new ones, never a part."""
    if not hasattr(tensors, "items"):
        raise TypeError(f"save_file: expected a dict of tensors, got {type(tensors).__name__}")
    named = []
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"save_file: tensor names must be strings, got {name!r}")
        if isinstance(value, Tensor):
            named.append((name, value.detach()))
            continue
        array = np.asarray(value)
        if array.dtype.kind not in "fiub":
            raise TypeError(f"save_file: {name!r} is not numeric (dtype {array.dtype})")
        named.append((name, tensor(array, dtype="float64" if array.dtype.kind in "iu" or array.dtype == np.float64
                                   else "float32")))
    meta = {} if metadata is None else dict(metadata)
    for k, v in meta.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"save_file: metadata must map strings to strings, got {k!r}: {v!r}")
    _nn.save_file(named, os.fspath(filename), meta)


def load_file(filename):
    """The tensors of a safetensors file as a dict name -> Tensor, in the file's order (I64 and I32
    entries as float64 tensors). The file is validated first: a RuntimeError names what is wrong."""
    tensors, _ = _nn.load_file(os.fspath(filename))
    return dict(tensors)


def load_metadata(filename):
    """The file's "__metadata__" strings (the command's checkpoints record the model's settings there)."""
    return _nn.load_file(os.fspath(filename))[1]

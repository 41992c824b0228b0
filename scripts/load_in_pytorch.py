#!/usr/bin/env python3
"""Loads a normlab safetensors checkpoint into PyTorch and compares predictions.

Usage: /usr/bin/python3 scripts/load_in_pytorch.py spirals.safetensors
(the model of examples/train_and_save.cc; needs Debian's python3-torch). With the `safetensors`
package installed, `safetensors.torch.load_file(path)` does what read_safetensors does here.
"""
import json
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    """The safetensors format: 8-byte little-endian header length, JSON header, raw data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"])
    return tensors


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "spirals.safetensors"
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(),
        torch.nn.Linear(64, 2))
    model.load_state_dict(read_safetensors(path), strict=True)  # same names, same shapes
    model.eval()
    x = torch.tensor([[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]])
    with torch.no_grad():
        print(model(x))


if __name__ == "__main__":
    main()

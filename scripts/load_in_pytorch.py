#!/usr/bin/env python3
"""Loads a normlab safetensors checkpoint into PyTorch and prints its logits for fixed inputs.

Usage: /usr/bin/python3 scripts/load_in_pytorch.py build/examples/spirals.safetensors
(the file examples/train_and_save.cc writes; needs Debian's python3-torch). It prints the logits
for x = [[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]] in the format in which train_and_save prints
normlab's for the same inputs, so the two can be compared line by line (they agree to ~1e-6).
With the `safetensors` package installed, `safetensors.torch.load_file(path)` does what
read_safetensors does here.

With --compare LOGITS.txt (the file `train_and_save MODEL OPTIM LOGITS.txt` writes: normlab's
logits for the same inputs, 9 significant digits) it also prints the largest difference and exits
with status 1 if it exceeds 1e-5 (the CTest examples/load_in_pytorch, added when torch is installed).
"""
import argparse
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


# Both programs are float32: they round differently (summation order, SIMD kernels) and agree to
# about 2e-6 on these logits of magnitude up to ~7 (a few float32 ulps); 1e-5 leaves a 5x margin.
TOLERANCE = 1e-5


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default="spirals.safetensors", help="the checkpoint to load")
    ap.add_argument("--compare", metavar="LOGITS.txt", help="normlab's logits, to compare with")
    args = ap.parse_args()
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(),
        torch.nn.Linear(64, 2))
    model.load_state_dict(read_safetensors(args.path), strict=True)  # same names, same shapes
    model.eval()
    x = torch.tensor([[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]])  # as in examples/train_and_save.cc
    with torch.no_grad():
        logits = model(x)
    print("PyTorch's logits for x = [[0.5, -0.2], [-0.7, 0.1], [0.0, 0.9]]:")
    for row in logits.tolist():
        print(" ".join(f"{v:12.7f}" for v in row))
    if args.compare:
        with open(args.compare) as f:
            theirs = torch.tensor([[float(v) for v in line.split()] for line in f if line.strip()])
        if theirs.shape != logits.shape:
            sys.exit(f"{args.compare}: expected {list(logits.shape)} logits, got {list(theirs.shape)}")
        diff = (logits.double() - theirs.double()).abs().max().item()
        print(f"largest |PyTorch - normlab| = {diff:.3g} (tolerance {TOLERANCE:g})")
        if not diff <= TOLERANCE:
            sys.exit(1)


if __name__ == "__main__":
    main()

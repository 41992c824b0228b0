#!/usr/bin/env bash
# The CTest notebooks/<name>: executes one notebook of examples/notebooks/ with
# `jupyter nbconvert --execute` against the built Python package, in a scratch folder (so the
# files it writes stay out of the source tree); fails when any cell raises, its assertions included.
# The executed copy, with its outputs, is kept as SCRATCH/<name>.ipynb.
# Usage: test-notebook.sh NOTEBOOK PYTHON_DIR SCRATCH_DIR
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 NOTEBOOK PYTHON_DIR SCRATCH_DIR" >&2
  exit 2
fi
notebook=$1 python_dir=$(cd "$2" && pwd) scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cp "$notebook" "$scratch/"
cd "$scratch"
PYTHONPATH="$python_dir" PYTHONDONTWRITEBYTECODE=1 MPLBACKEND=Agg \
  jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=600 \
  --ExecutePreprocessor.kernel_name=python3 "$(basename "$notebook")"

#!/usr/bin/env bash
# normlab with its defaults beside scikit-learn's MLP defaults on iris, wine, breast cancer and
# diabetes (the data sets scikit-learn ships), on the same train/test split: bench/small_data.py.
# Installs Debian's python3-sklearn if it is missing (as root), and runs Debian's python3.
# Environment: BUILD_DIR (build), OUT_DIR (a temporary directory by default: the CSV files and
# normlab's result folders).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if ! /usr/bin/python3 -c "import sklearn" 2>/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then echo "bench/small_data.sh: needs python3-sklearn (apt-get install python3-sklearn, as root)" >&2; exit 1; fi
  apt-get install -y python3-sklearn >/dev/null
fi
OUT_DIR=${OUT_DIR:-$(mktemp -d)}
/usr/bin/python3 bench/small_data.py "$BUILD_DIR" "$OUT_DIR"

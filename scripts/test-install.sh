#!/usr/bin/env bash
# The CTest install/consumer: installs a built normlab into a scratch prefix and uses it as a user
# would. `cmake --install` (copies the built files, builds nothing), then
#   - the installed `normlab --version` runs; no internal kernel header is installed;
#   - examples/consumer built with CMake's find_package(normlab CONFIG), and run;
#   - the same main.cc built with `pkg-config --cflags --libs normlab`, and run;
#   - the Python package imported from the prefix and examples/consumer/consumer.py run.
# The consumer trains a small model and gradchecks a custom op; it fails when either goes wrong.
# Usage: test-install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR CXX [EXTRA_FLAGS]
# EXTRA_FLAGS: compile and link flags the libraries need from their users (a sanitizer build's).
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR SCRATCH_DIR CXX [EXTRA_FLAGS]" >&2
  exit 2
fi
build=$1 source=$2 scratch=$3 cxx=$4 extra=${5:-}
prefix=$scratch/prefix

rm -rf "$scratch"
mkdir -p "$scratch"
echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log"
echo "$(grep -c '^-- Installing' "$scratch/install.log") files installed"

echo "== the installed command"
"$prefix/bin/normlab" --version
test -f "$prefix/share/normlab/load_in_pytorch.py"
test -f "$prefix/include/normlab/nn/linear.h"
test -f "$prefix/include/normlab/autograd/kernels/target.h"   # public, though under kernels/
if [ -e "$prefix/include/normlab/autograd/kernels/gemm.h" ]; then
  echo "an internal header was installed: include/normlab/autograd/kernels/gemm.h" >&2
  exit 1
fi

echo "== examples/consumer with find_package(normlab CONFIG)"
CXXFLAGS="$extra" LDFLAGS="$extra" cmake -S "$source/examples/consumer" -B "$scratch/cmake-build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >"$scratch/configure.log" \
  || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/cmake-build" >"$scratch/build.log" || { cat "$scratch/build.log"; exit 1; }
"$scratch/cmake-build/consumer"

echo "== examples/consumer/main.cc with pkg-config"
pc_dir=$(dirname "$(find "$prefix" -name normlab.pc | head -n 1)")  # <libdir>/pkgconfig
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs normlab)
echo "pkg-config --cflags --libs normlab: $flags"
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++20 $extra "$source/examples/consumer/main.cc" -o "$scratch/consumer-pkg-config" $flags
"$scratch/consumer-pkg-config"

# The Python package, when the build has it (pybind11-dev and python3-dev installed): imported by
# Debian's python3 from the prefix,
# and examples/consumer/consumer.py run (scripts/test-python-package.sh).
if compgen -G "$build/python/normlab/_normlab*.so" >/dev/null; then
  echo "== the Python package from the prefix"
  bash "$source/scripts/test-python-package.sh" "$prefix/lib/python3/dist-packages" "$source" "$scratch"
fi

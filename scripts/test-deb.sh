#!/usr/bin/env bash
# The CTest install/deb: builds the Debian package (cpack -G DEB, the `make deb` package) of a built
# normlab into a scratch folder and checks it without installing it into the system (a test that
# changed /usr would change what every later build and test on the machine finds, and needs root):
#   - its file list has the command, the libraries, headers, CMake package, normlab.pc and script;
#   - its Depends has the shared libraries the command links, and apt can install it with them
#     (apt-get install --simulate ./normlab_*.deb);
#   - unpacked (dpkg-deb -x) into a scratch root: that root's usr/bin/normlab --version and
#     `normlab study --quick` run, and examples/consumer builds against its usr/ with
#     find_package(normlab CONFIG) (the package's files find their prefix from their own place);
#   - the Python package imported from that root's usr/lib/python3/dist-packages (where python3
#     finds it once the package is installed) and examples/consumer/consumer.py run.
# Usage: test-deb.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR CXX [EXTRA_FLAGS]
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR SCRATCH_DIR CXX [EXTRA_FLAGS]" >&2
  exit 2
fi
build=$1 source=$2 scratch=$3 cxx=$4 extra=${5:-}

rm -rf "$scratch"
mkdir -p "$scratch"
echo "== cpack -G DEB"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/package" >"$scratch/cpack.log" \
  || { cat "$scratch/cpack.log"; exit 1; }
debs=("$scratch"/package/normlab_*.deb)
deb=${debs[0]}
test -f "$deb"
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")  # apt-get takes a path, not a name
echo "$(basename "$deb"): $(du -h "$deb" | cut -f1)"

echo "== its files and dependencies"
dpkg-deb -c "$deb" | awk '{print $6}' >"$scratch/files.txt"
for f in usr/bin/normlab usr/lib/libnormlab_autograd.a usr/lib/libnormlab_nn.a usr/lib/libnormlab_experiments.a \
         usr/include/normlab/nn/linear.h usr/lib/cmake/normlab/normlabConfig.cmake \
         usr/lib/cmake/normlab/normlabConfigVersion.cmake usr/lib/pkgconfig/normlab.pc \
         usr/share/normlab/load_in_pytorch.py; do
  grep -qx "\./$f" "$scratch/files.txt" || { echo "not in the package: /$f" >&2; exit 1; }
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for p in libhwy1 libstdc++6; do
  [[ ", $depends" == *", $p "* ]] || { echo "Depends lacks $p" >&2; exit 1; }
done
if command -v apt-get >/dev/null; then
  apt-get install --simulate "$deb" >"$scratch/apt.log" 2>&1 || { cat "$scratch/apt.log"; exit 1; }
  grep '^Inst ' "$scratch/apt.log"
fi

echo "== the unpacked command"
root=$scratch/root
dpkg-deb -x "$deb" "$root"
"$root/usr/bin/normlab" --version
"$root/usr/bin/normlab" study --quick --quiet --out "$scratch/study"
test -s "$scratch/study/report.md"
echo "study --quick: $(wc -l <"$scratch/study/report.md") lines of report"

echo "== examples/consumer against the unpacked usr/"
CXXFLAGS="$extra" LDFLAGS="$extra" cmake -S "$source/examples/consumer" -B "$scratch/consumer" \
  -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_CXX_COMPILER="$cxx" >"$scratch/configure.log" \
  || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/consumer" >"$scratch/build.log" || { cat "$scratch/build.log"; exit 1; }
"$scratch/consumer/consumer" | tail -n 3

# The Python package, when the build has it (pybind11-dev and python3-dev installed): imported by
# Debian's python3 from the unpacked usr/,
# and examples/consumer/consumer.py run (scripts/test-python-package.sh).
if compgen -G "$build/python/normlab/_normlab*.so" >/dev/null; then
  echo "== the Python package from the unpacked usr/"
  bash "$source/scripts/test-python-package.sh" "$root/usr/lib/python3/dist-packages" "$source" "$scratch"
fi

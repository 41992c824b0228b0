#!/usr/bin/env bash
# Installs the Debian packages normlab needs, if any is missing: PACKAGES to build, test and run
# (`make test`, `make run`); with --bench also BENCH_PACKAGES, which only the benchmark needs (`make bench`);
# with --fuzz also FUZZ_PACKAGES (clang and its sanitizer runtimes: `make fuzz`, `make sanitize`);
# with --docs also DOCS_PACKAGES (Doxygen and Graphviz: `make docs`, the API reference).
set -euo pipefail

with_bench=0
with_fuzz=0
with_docs=0
for arg in "$@"; do
  case "$arg" in
    --bench) with_bench=1 ;;
    --fuzz) with_fuzz=1 ;;
    --docs) with_docs=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (expected --bench, --fuzz, --docs or nothing)" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake make git     # toolchain
  pkg-config                         # normlab.pc: the install test builds a program with it
  libhwy-dev                         # Google Highway: SIMD kernels with runtime dispatch
  libboost-test-dev                  # Boost.Test: the test suites
  libfccp-dev                        # Fast C++ CSV Parser: CSV data sets
  libcli11-dev                       # CLI11: the normlab command line
  nlohmann-json3-dev                 # JSON: safetensors headers, manifests
  zlib1g-dev                         # gzip: Fashion-MNIST IDX files
  gnuplot-nox                        # plots of the experiments
  help2man                           # the man page (normlab.1), made from normlab --help at build time
  dataset-fashion-mnist              # the Fashion-MNIST data set
  fortunes                           # fortune-mod's English fortunes (BSD): the default text corpus
  libopenmpi-dev openmpi-bin         # OpenMPI: data-parallel jobs (dist/, SyncBatchNorm) and their tests
  python3-dev pybind11-dev           # the Python package (python/): its extension module
  python3-numpy python3-pytest       # NumPy in and out of it, and its pytest suite
  jupyter-nbconvert python3-ipykernel  # the notebooks (examples/notebooks/), executed by the tests
  python3-matplotlib                 # their plots
  python3-pandas                     # normlab.experiments' results as DataFrames, and its test
)

BENCH_PACKAGES=(
  libbenchmark-dev                   # Google Benchmark: bench/bench_kernels
  libopenblas0-pthread               # OpenBLAS as libblas.so.3: PyTorch's matmul in the comparison
  python3-torch                      # PyTorch 1.13 (Debian's /usr/bin/python3): the other side of the table
)
FUZZ_PACKAGES=(
  clang                              # libFuzzer harnesses and the sanitizer build (make fuzz, make sanitize)
  libclang-rt-14-dev                 # clang's runtime libraries: libFuzzer, ASan, UBSan
)
DOCS_PACKAGES=(
  doxygen                            # the API reference from the public headers' comments (make docs)
  graphviz                           # dot: the class inheritance graphs of the API reference
)
if (( with_bench )); then PACKAGES+=("${BENCH_PACKAGES[@]}"); fi
if (( with_fuzz )); then PACKAGES+=("${FUZZ_PACKAGES[@]}"); fi
if (( with_docs )); then PACKAGES+=("${DOCS_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "normlab: installing missing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "normlab: these packages are missing and you are not root: ${missing[*]}" >&2
    echo "normlab: install them with: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

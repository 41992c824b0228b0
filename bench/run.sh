#!/usr/bin/env bash
# The benchmark: builds bench_kernels, then for each thread count runs normlab's benchmarks and
# PyTorch's (bench/pytorch_bench.py) on the same workloads one after the other, and prints one
# table (workload, threads, normlab median, PyTorch median, ratio). Machines are noisy: compare
# the ratios of one run, not absolute times across runs.
#
# Environment: THREADS ("1 2"), FILTER (regex of workload names, "."), REPS (5 repetitions),
# MIN_TIME (0.2 s per repetition), BUILD_DIR (build), MARKDOWN=1 for a Markdown table,
# OUT_DIR (where the JSON results stay; a temporary directory by default).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
THREADS=${THREADS:-"1 2"}
FILTER=${FILTER:-.}
REPS=${REPS:-5}
MIN_TIME=${MIN_TIME:-0.2}
PYTHON=/usr/bin/python3  # Debian's python3 with python3-torch (a pyenv python3 on PATH has no torch)

for t in $THREADS; do
  if ! [[ $t =~ ^[0-9]+$ ]] || (( t < 1 )); then
    echo "bench/run.sh: THREADS must list thread counts of at least 1, got '$t'" >&2
    exit 2
  fi
done

echo "== building bench_kernels in $BUILD_DIR" >&2
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! grep -q "benchmark_DIR:PATH=/" "$BUILD_DIR/CMakeCache.txt"; then
  echo "bench/run.sh: Google Benchmark was not found: apt-get install libbenchmark-dev" >&2
  exit 2
fi
cmake --build "$BUILD_DIR" -j2 --target bench_kernels >/dev/null

have_torch=1
if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "bench/run.sh: PyTorch is not installed: apt-get install python3-torch (the table shows normlab only)" >&2
  have_torch=0
fi

OUT_DIR=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$OUT_DIR"
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /CPU: /' >&2
files=()
for t in $THREADS; do
  echo "== normlab, $t thread(s)" >&2
  "$BUILD_DIR/bench/bench_kernels" --threads="$t" --benchmark_filter="$FILTER" \
    --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$MIN_TIME" --benchmark_out="$OUT_DIR/normlab_$t.json" \
    --benchmark_out_format=json >&2
  files+=("$OUT_DIR/normlab_$t.json")
  if (( have_torch )); then
    echo "== PyTorch, $t thread(s)" >&2
    "$PYTHON" bench/pytorch_bench.py --threads "$t" --filter "$FILTER" --repetitions "$REPS" \
      --min-time "$MIN_TIME" --out "$OUT_DIR/pytorch_$t.json"
    files+=("$OUT_DIR/pytorch_$t.json")
  fi
done

echo >&2
"$PYTHON" bench/table.py ${MARKDOWN:+--markdown} "${files[@]}"
echo "(JSON results in $OUT_DIR)" >&2
(( have_torch )) || exit 3

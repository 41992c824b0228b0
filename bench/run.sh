#!/usr/bin/env bash
# The benchmark (`make bench`): builds bench_kernels, then for each thread count runs normlab's
# benchmarks and PyTorch's (bench/pytorch_bench.py) on the same workloads one after the other, and
# prints one table (workload, threads, normlab median, PyTorch median, ratio). Then, unless a
# FILTER or PARTS narrows it, one epoch of Fashion-MNIST with wall time and peak memory on both
# sides (bench/epoch.sh) and the batch-size sweep protocol on both sides (bench/protocol.sh).
# Machines are noisy: compare the ratios of one run, not absolute times across runs.
#
# Environment: PARTS (which pieces: "table epoch protocol" by default, "table" when FILTER is set),
# THREADS ("1 2"), FILTER (regex of workload names, "."), REPS (3 repetitions), MIN_TIME (0.2 s
# per repetition), ROUNDS (3: the table's normlab and PyTorch runs alternate N times and
# the table shows each ratio's median and range over the rounds), BUILD_DIR (build), MARKDOWN=1
# for Markdown tables, OUT_DIR (where the results stay; a temporary directory by default).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
THREADS=${THREADS:-"1 2"}
if [ -n "${FILTER:-}" ]; then PARTS=${PARTS:-table}; else PARTS=${PARTS:-"table epoch protocol"}; fi
FILTER=${FILTER:-.}
REPS=${REPS:-3}
ROUNDS=${ROUNDS:-3}
MIN_TIME=${MIN_TIME:-0.2}
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's python3 with python3-torch (a pyenv python3 on PATH has no torch)

for t in $THREADS; do
  if ! [[ $t =~ ^[0-9]+$ ]] || (( t < 1 )); then
    echo "bench/run.sh: THREADS must list thread counts of at least 1, got '$t'" >&2
    exit 2
  fi
done
for p in $PARTS; do
  [[ $p == table || $p == epoch || $p == protocol ]] ||
    { echo "bench/run.sh: PARTS lists table, epoch and/or protocol, got '$p'" >&2; exit 2; }
done
if ! [[ $REPS =~ ^[0-9]+$ ]] || (( REPS < 1 )); then
  echo "bench/run.sh: REPS must be a whole number of at least 1, got '$REPS'" >&2
  exit 2
fi
if ! [[ $ROUNDS =~ ^[0-9]+$ ]] || (( ROUNDS < 1 )); then
  echo "bench/run.sh: ROUNDS must be a whole number of at least 1, got '$ROUNDS'" >&2
  exit 2
fi
if ! [ -x "$PYTHON" ]; then
  echo "bench/run.sh: $PYTHON is missing (the table is printed by it): apt-get install python3 python3-torch" >&2
  exit 2
fi
if ! "$PYTHON" -c "import re, sys; re.compile(sys.argv[1])" "$FILTER" 2>/dev/null; then
  echo "bench/run.sh: FILTER is not a valid regular expression: '$FILTER'" >&2
  exit 2
fi

have_torch=1
if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "bench/run.sh: PyTorch is not installed: apt-get install python3-torch, or run make bench," \
       "which installs it (the tables show normlab only)" >&2
  have_torch=0
elif ! ls /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 >/dev/null 2>&1; then
  echo "bench/run.sh: OpenBLAS is not installed: PyTorch's matmul runs on the reference BLAS, about 10x" \
       "slower (apt-get install libopenblas0-pthread, or make bench)" >&2
fi

OUT_DIR=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$OUT_DIR"
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /CPU: /' >&2
status=0

if [[ " $PARTS " == *" table "* ]]; then
  echo "== building bench_kernels in $BUILD_DIR" >&2
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  if ! grep -q "benchmark_DIR:PATH=/" "$BUILD_DIR/CMakeCache.txt"; then
    echo "bench/run.sh: Google Benchmark was not found: apt-get install libbenchmark-dev (or make bench)" >&2
    exit 2
  fi
  cmake --build "$BUILD_DIR" -j2 --target bench_kernels >/dev/null

  # Google Benchmark matches the filter against the registered name, which ends in /real_time:
  # an end anchor ($) of FILTER must also match before that suffix.
  NORMLAB_FILTER=$(sed -E 's#(^|[^\\])[$]#\1(/real_time)?$#g' <<<"$FILTER")

  # Which workloads the filter selects, on each side, before anything runs.
  normlab_names=$("$BUILD_DIR/bench/bench_kernels" --benchmark_list_tests --benchmark_filter="$NORMLAB_FILTER" 2>/dev/null |
                  sed 's|/real_time$||' || true)
  torch_names=""
  (( have_torch )) && torch_names=$("$PYTHON" bench/pytorch_bench.py --list --filter "$FILTER" 2>/dev/null || true)
  if [ -z "$normlab_names" ] && [ -z "$torch_names" ]; then
    echo "bench/run.sh: no workload matches FILTER='$FILTER'. The workloads:" >&2
    "$BUILD_DIR/bench/bench_kernels" --benchmark_list_tests | sed 's|/real_time$||; s/^/  /' >&2
    exit 2
  fi
  only_one=$(comm -3 <(sort <<<"$normlab_names") <(sort <<<"$torch_names") | sed '/^\s*$/d' || true)
  if (( have_torch )) && [ -n "$only_one" ]; then
    echo "bench/run.sh: these workloads run on one side only (no ratio for them):" >&2
    sed 's/^\t/  PyTorch only: /; /^  PyTorch only/!s/^/  normlab only: /' <<<"$only_one" >&2
  fi
  # STREAM, the FMA peak and the pool's start-up cost always run on normlab's side (a few seconds):
  # this machine's memory rate and FMA peak are the yardsticks of every GB/s and GFLOP/s figure,
  # and the start-up cost that of every kernel's choice of thread count.
  NORMLAB_FILTER="($NORMLAB_FILTER)|^stream |^peak |^pool "

  # Round r of thread count t: normlab, then PyTorch (A/B/A/B over the rounds, so that a slow
  # minute of a shared machine falls on both sides); table.py pairs the files into rounds in order.
  files=()
  for r in $(seq 1 "$ROUNDS"); do
    for t in $THREADS; do
      round_text=""
      (( ROUNDS > 1 )) && round_text=", round $r of $ROUNDS"
      if [ -n "$normlab_names" ]; then
        echo "== normlab, $t thread(s)$round_text" >&2
        "$BUILD_DIR/bench/bench_kernels" --threads="$t" --benchmark_filter="$NORMLAB_FILTER" \
          --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true \
          --benchmark_min_time="$MIN_TIME" --benchmark_out="$OUT_DIR/normlab_${t}_$r.json" \
          --benchmark_out_format=json >&2
        files+=("$OUT_DIR/normlab_${t}_$r.json")
      fi
      if (( have_torch )) && [ -n "$torch_names" ]; then
        echo "== PyTorch, $t thread(s)$round_text" >&2
        # OpenMP's idle workers sleep rather than spin between PyTorch's parallel regions (its
        # default spins), so that spinning threads competing for 2 cores do not decide the ratio.
        OMP_WAIT_POLICY=passive "$PYTHON" bench/pytorch_bench.py --threads "$t" --filter "$FILTER" --repetitions "$REPS" \
          --min-time "$MIN_TIME" --out "$OUT_DIR/pytorch_${t}_$r.json"
        files+=("$OUT_DIR/pytorch_${t}_$r.json")
      fi
    done
  done
  echo >&2
  "$PYTHON" bench/table.py ${MARKDOWN:+--markdown} --json "$OUT_DIR/table.json" "${files[@]}"
fi

if [[ " $PARTS " == *" epoch "* ]]; then
  echo >&2
  OUT_DIR="$OUT_DIR/epoch" BUILD_DIR="$BUILD_DIR" THREADS="$THREADS" bash bench/epoch.sh || status=$?
fi
if [[ " $PARTS " == *" protocol "* ]]; then
  echo >&2
  OUT_DIR="$OUT_DIR/protocol" BUILD_DIR="$BUILD_DIR" THREADS=1 bash bench/protocol.sh || status=$?
fi

echo "(results in $OUT_DIR)" >&2
(( have_torch )) || exit 3
exit "$status"

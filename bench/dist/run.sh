#!/usr/bin/env bash
# The data-parallel benchmark (`make bench-dist`): bench_dist and PyTorch's bench/dist/pytorch_dist.py
# on the same workloads, in one process (1 and 2 threads) and over mpirun -np 2 (1 thread per rank),
# alternating for ROUNDS rounds; then the distributed sweep: `mpirun -np 2 normlab sweep` against one
# process with 2 threads, wall time. Prints Markdown tables (bench/dist/table.py).
# Environment: ROUNDS (3), REPS (30: repetitions per workload and round; the MLP's step and the
# allreduces take 3x as many), BUILD_DIR (build), OUT_DIR (where the raw results stay; a temporary
# directory by default), PARTS ("table sweep").
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-30}
PARTS=${PARTS:-"table sweep"}
PYTHON=${PYTHON:-/usr/bin/python3}
for v in ROUNDS REPS; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || (( ${!v} < 1 )); then
    echo "bench/dist/run.sh: $v must be a whole number of at least 1, got '${!v}'" >&2; exit 2
  fi
done
for p in $PARTS; do
  [[ $p == table || $p == sweep ]] || { echo "bench/dist/run.sh: PARTS lists table and/or sweep, got '$p'" >&2; exit 2; }
done
command -v mpirun > /dev/null || { echo "bench/dist/run.sh: mpirun is missing: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 2; }
[ -x "$BUILD_DIR/bench/bench_dist" ] && [ -x "$BUILD_DIR/experiments/normlab" ] ||
  { echo "bench/dist/run.sh: build first (make bench-dist builds $BUILD_DIR/bench/bench_dist)" >&2; exit 2; }
have_torch=1
"$PYTHON" -c "import torch.distributed as d; assert d.is_gloo_available()" 2> /dev/null || {
  echo "bench/dist/run.sh: PyTorch with gloo is not installed (apt-get install python3-torch): normlab only" >&2; have_torch=0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
raw="$out/raw.jsonl"
: > "$raw"
# Runs one side at one setup ("processes threads") and tags its JSON lines.
run_side() {  # side round processes threads
  local side=$1 round=$2 np=$3 t=$4 cmd
  if [ "$side" = normlab ]; then cmd=("$BUILD_DIR/bench/bench_dist" --threads "$t" --reps "$REPS")
  else cmd=("$PYTHON" bench/dist/pytorch_dist.py --threads "$t" --reps "$REPS"); fi
  if [ "$np" -gt 1 ]; then
    MASTER_PORT=$((29500 + RANDOM % 2000)) mpirun --oversubscribe -np "$np" -x MASTER_PORT "${cmd[@]}"
  else
    "${cmd[@]}"
  fi | "$PYTHON" -c 'import json, sys
for line in sys.stdin:
    if line.startswith("{"):
        r = json.loads(line); r["side"] = sys.argv[1]; r["round"] = int(sys.argv[2]); print(json.dumps(r))' \
    "$side" "$round" >> "$raw"
}
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
family=$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
model=$(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
echo "Machine: $cpu (family $family, model $model), $(nproc) cores; OpenMPI $(mpirun --version | head -1 | awk '{print $NF}')"
if [[ " $PARTS " == *" table "* ]]; then
  for round in $(seq 1 "$ROUNDS"); do
    sides="normlab"; [ "$have_torch" = 1 ] && sides="normlab pytorch"
    for side in $sides; do
      for setup in "1 1" "1 2" "2 1"; do
        run_side "$side" "$round" $setup
      done
    done
    echo "round $round of $ROUNDS done" >&2
  done
  "$PYTHON" bench/dist/table.py "$raw"
fi
if [[ " $PARTS " == *" sweep "* ]]; then
  # The distributed sweep: 24 independent runs, split over 2 processes (1 thread each) or run 2 at a
  # time in one process (2 threads); the CSV files must be the same.
  args=(sweep --train-limit 10000 --epochs 1 --seeds 0,1 --batch-sizes 16,32,64,128 --norms none,batch,layer,group --quiet)
  echo
  echo "| distributed sweep (\`normlab ${args[*]}\`), round | one process, 2 threads | mpirun -np 2, 1 thread each | one process time / 2 processes time |"
  echo "|---|---|---|---|"
  for round in $(seq 1 "$ROUNDS"); do
    t0=$(date +%s%N)
    "$BUILD_DIR/experiments/normlab" "${args[@]}" --threads 2 --out "$out/sweep-1" > /dev/null
    t1=$(date +%s%N)
    mpirun --oversubscribe -np 2 "$BUILD_DIR/experiments/normlab" "${args[@]}" --threads 1 --out "$out/sweep-2" > /dev/null
    t2=$(date +%s%N)
    for f in summary.csv runs.csv epochs.csv; do
      cmp -s "$out/sweep-1/$f" "$out/sweep-2/$f" || { echo "bench/dist/run.sh: $f differs between 1 and 2 processes" >&2; exit 1; }
    done
    awk -v a=$((t1 - t0)) -v b=$((t2 - t1)) -v r="$round" \
      'BEGIN { printf "| %d | %.2f s | %.2f s | %.2fx |\n", r, a / 1e9, b / 1e9, a / b }'
  done
fi
echo
echo "Raw results: $raw"

#!/usr/bin/env bash
# One epoch of Fashion-MNIST (all 60,000 training images) with the default model of `make run`
# (MLP 784-256-256-10, ReLU, batch 128, SGD momentum 0.9, lr 0.05 with 50 warmup steps then
# cosine), normlab beside PyTorch, each run in its own process: the epoch's wall time (training
# steps + batch gathering), the whole run's (with the test evaluation; BatchNorm also evaluated
# with precise and test-batch statistics, as in the sweep), the process's wall time (data loading
# included) and its peak resident memory (/usr/bin/time: getrusage's ru_maxrss). Then the peak
# memory of a small run after 1,000 and after 10,000 steps, on both sides: it must stay flat.
# ARCH=cnn runs the same with the study's CNN (conv3x3 32 - norm - ReLU - maxpool 2 - conv3x3 64 -
# norm - ReLU - maxpool 2 - Linear 3136->10) instead of the MLP.
#
# Environment: ARCH (mlp), NORMS ("none batch layer"), THREADS ("1 2"), BUILD_DIR (build), OUT_DIR (a
# temporary directory by default), MARKDOWN=1 for a Markdown table, EPOCHS (1; more epochs show
# whether the memory stays flat).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
NORMS=${NORMS:-"none batch layer"}
THREADS=${THREADS:-"1 2"}
EPOCHS=${EPOCHS:-1}
ARCH=${ARCH:-mlp}
case $ARCH in
  mlp) model=(--hidden 256,256) model_name="MLP 784-256-256-10" ;;
  cnn) model=(--arch cnn) model_name="the study's CNN" ;;
  *) echo "bench/epoch.sh: ARCH is mlp or cnn, got '$ARCH'" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's python3 with python3-torch (a pyenv python3 on PATH has no torch)

for t in $THREADS; do
  if ! [[ $t =~ ^[0-9]+$ ]] || (( t < 1 )); then
    echo "bench/epoch.sh: THREADS must list thread counts of at least 1, got '$t'" >&2
    exit 2
  fi
done
if ! [[ $EPOCHS =~ ^[0-9]+$ ]] || (( EPOCHS < 1 )); then
  echo "bench/epoch.sh: EPOCHS must be at least 1, got '$EPOCHS'" >&2
  exit 2
fi
if [ ! -x /usr/bin/time ]; then
  echo "bench/epoch.sh: /usr/bin/time is missing (it measures the peak memory): apt-get install time" >&2
  exit 2
fi
if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  echo "bench/epoch.sh: Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (or make bench)" >&2
  exit 2
fi
have_torch=1
if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "bench/epoch.sh: PyTorch is not installed: apt-get install python3-torch (or make bench); normlab only" >&2
  have_torch=0
fi

if ! log=$( (cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD_DIR" -j2 --target normlab) 2>&1); then
  echo "$log" >&2
  echo "bench/epoch.sh: the build failed" >&2
  exit 2
fi
OUT_DIR=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$OUT_DIR"
echo "== one epoch of Fashion-MNIST, $model_name b128 (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2

common=(--train-limit 0 --batch-sizes 128 --epochs "$EPOCHS" --seeds 0 --lr 0.05 --reference-batch 128 --warmup 50
        --eval-batch 1000)
for t in $THREADS; do
  for n in $NORMS; do
    echo "  normlab, $n, $t thread(s)" >&2
    /usr/bin/time -f "%e %M" -o "$OUT_DIR/normlab_${n}_$t.time" "$BUILD_DIR/experiments/normlab" sweep \
      --dataset fashion-mnist --norms "$n" "${common[@]}" "${model[@]}" --momentum 0.9 --schedule cosine \
      --threads "$t" --quiet --out "$OUT_DIR/normlab_${n}_$t" >/dev/null
    if (( have_torch )); then
      echo "  PyTorch, $n, $t thread(s)" >&2
      /usr/bin/time -f "%e %M" -o "$OUT_DIR/pytorch_${n}_$t.time" "$PYTHON" bench/pytorch_protocol.py \
        --arch "$ARCH" --norms "$n" "${common[@]}" --eval-last 1 --threads "$t" --out "$OUT_DIR/pytorch_${n}_$t.json" 2>/dev/null
    fi
  done
done

"$PYTHON" - "$OUT_DIR" "$THREADS" "$NORMS" "$EPOCHS" "$model_name" "${MARKDOWN:-}" <<'EOF'
import json, os, sys
out, threads, norms, epochs, model, markdown = (sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4],
                                                sys.argv[5], sys.argv[6])

def side(name, n, t):
    tf = os.path.join(out, f"{name}_{n}_{t}.time")
    if not os.path.exists(tf):
        return None
    wall, rss_kb = open(tf).read().split()[-2:]
    if name == "normlab":
        run = json.load(open(os.path.join(out, f"normlab_{n}_{t}", "manifest.json")))["run_timing"][0]
    else:
        run = json.load(open(os.path.join(out, f"pytorch_{n}_{t}.json")))["runs"][0]
    return {"epoch": run["step_seconds"] + run["data_seconds"], "run": run["seconds"], "wall": float(wall),
            "rss": int(rss_kb) / 1024}

header = ["norm", "threads", "normlab epoch", "PyTorch epoch", "PyTorch/normlab", "normlab run", "PyTorch run",
          "normlab process", "PyTorch process", "normlab peak RSS", "PyTorch peak RSS"]
rows = []
for t in threads:
    for n in norms:
        a, b = side("normlab", n, t), side("pytorch", n, t)
        s = lambda x, k: f"{x[k]:.2f} s" if x else "-"
        m = lambda x: f"{x['rss']:.0f} MiB" if x else "-"
        rows.append([n, t, s(a, "epoch"), s(b, "epoch"), f"{b['epoch'] / a['epoch']:.2f}x" if a and b else "-",
                     s(a, "run"), s(b, "run"), s(a, "wall"), s(b, "wall"), m(a), m(b)])
print(f"\nFashion-MNIST, {epochs} epoch(s) of 60,000 images, {model} b128: epoch = training steps + batch"
      " gathering; run = + test evaluation (BatchNorm: + precise and test-batch evaluation); process = whole"
      " command with data loading; peak RSS = ru_maxrss of the process")
if markdown:
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
else:
    w = [max(len(x) for x in col) for col in zip(header, *rows)]
    for r in [header, ["-" * x for x in w]] + rows:
        print("  ".join(c.ljust(x) if i == 0 else c.rjust(x) for i, (c, x) in enumerate(zip(r, w))))
EOF
# Memory over steps: the same small run (LayerNorm, batch 2, the first 2,000 images) for 1,000 and
# 10,000 steps; the peak resident memory must not grow with the steps (graphs and buffers freed).
flat=(--train-limit 2000 --batch-sizes 2 --seeds 0 --lr 0.05 --reference-batch 128 --warmup 50 --eval-batch 1000)
echo "== memory over steps: LayerNorm, batch 2, 2,000 images, 1,000 and 10,000 steps" >&2
line="Peak RSS after 1,000 / 10,000 steps (LayerNorm, batch 2):"
for side in normlab pytorch; do
  [[ $side == pytorch ]] && (( ! have_torch )) && continue
  rss=()
  for e in 1 10; do
    if [[ $side == normlab ]]; then
      /usr/bin/time -f "%M" -o "$OUT_DIR/flat_${side}_$e.time" "$BUILD_DIR/experiments/normlab" sweep --norms layer \
        "${model[@]}" --epochs "$e" "${flat[@]}" --threads 1 --quiet --out "$OUT_DIR/flat_normlab_$e" >/dev/null
    else
      /usr/bin/time -f "%M" -o "$OUT_DIR/flat_${side}_$e.time" "$PYTHON" bench/pytorch_protocol.py --norms layer \
        --arch "$ARCH" --epochs "$e" "${flat[@]}" --eval-last 1 --threads 1 2>/dev/null
    fi
    rss+=("$(( $(tail -1 "$OUT_DIR/flat_${side}_$e.time") / 1024 )) MiB")
  done
  line+=" $side ${rss[0]} / ${rss[1]};"
done
echo "${line%;}"

echo "(results in $OUT_DIR)" >&2
(( have_torch )) || exit 3

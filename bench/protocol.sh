#!/usr/bin/env bash
# The batch-size sweep protocol, normlab then PyTorch, one after the other on the same machine.
# ARCH=mlp (the default): Fashion-MNIST (first 20,000 training images, full test set), MLP
# 784-256-256-10 ReLU, SGD momentum 0.9, lr 0.05 x batch / 128 with 50 warmup steps then cosine,
# 5 epochs, 2 seeds, batch sizes 2..256, none/batch/layer (48 runs), one thread; normlab takes a
# few minutes, PyTorch about 10 on an idle machine.
# ARCH=cnn: the study's CNN (conv3x3 32 - norm - ReLU - maxpool 2 - conv3x3 64 - norm - ReLU -
# maxpool 2 - Linear 3136->10) on the first 10,000 training images, 3 epochs, 2 seeds, batch sizes
# 2..128, batch/layer/group (42 runs), the same optimizer and schedule (bench/README.md has the
# measured times: far longer than the MLP's).
# Prints the wall time of both per batch size (with the share spent in training steps) and both
# accuracy tables.
#
# Environment: ARCH (mlp), BUILD_DIR (build), OUT_DIR (a temporary directory by default; keeps the
# normlab sweep folder and pytorch.json), THREADS (1), SIDES ("normlab pytorch"), MARKDOWN=1 for
# Markdown tables; smaller runs for a check: BATCH_SIZES, SEEDS, EPOCHS, TRAIN_LIMIT, NORMS.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
THREADS=${THREADS:-1}
SIDES=${SIDES:-"normlab pytorch"}
ARCH=${ARCH:-mlp}
case $ARCH in
  mlp)
    BATCH_SIZES=${BATCH_SIZES:-2,4,8,16,32,64,128,256}
    EPOCHS=${EPOCHS:-5}
    TRAIN_LIMIT=${TRAIN_LIMIT:-20000}
    NORMS=${NORMS:-none,batch,layer}
    model=(--hidden 256,256) ;;
  cnn)
    BATCH_SIZES=${BATCH_SIZES:-2,4,8,16,32,64,128}
    EPOCHS=${EPOCHS:-3}
    TRAIN_LIMIT=${TRAIN_LIMIT:-10000}
    NORMS=${NORMS:-batch,layer,group}
    model=(--arch cnn) ;;
  *)
    echo "bench/protocol.sh: ARCH is mlp or cnn, got '$ARCH'" >&2
    exit 2 ;;
esac
SEEDS=${SEEDS:-0,1}
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's python3 with python3-torch (a pyenv python3 on PATH has no torch)

if ! [[ $THREADS =~ ^[0-9]+$ ]] || (( THREADS < 1 )); then
  echo "bench/protocol.sh: THREADS must be a thread count of at least 1, got '$THREADS'" >&2
  exit 2
fi
for s in $SIDES; do
  [[ $s == normlab || $s == pytorch ]] || { echo "bench/protocol.sh: SIDES lists normlab and/or pytorch, got '$s'" >&2; exit 2; }
done
if [[ $SIDES != *normlab* ]]; then
  echo "bench/protocol.sh: SIDES must include normlab (the tables are built from its sweep folder)" >&2
  exit 2
fi
if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  echo "bench/protocol.sh: Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (or make bench)" >&2
  exit 2
fi
have_torch=0 torch_missing=0
if [[ $SIDES == *pytorch* ]]; then
  if "$PYTHON" -c "import torch" 2>/dev/null; then
    have_torch=1
  else
    torch_missing=1
    echo "bench/protocol.sh: PyTorch is not installed: apt-get install python3-torch (or make bench);" \
         "only normlab's side runs" >&2
  fi
fi

echo "== building normlab in $BUILD_DIR" >&2
if ! log=$( (cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD_DIR" -j2 --target normlab) 2>&1); then
  echo "$log" >&2
  echo "bench/protocol.sh: the build failed" >&2
  exit 2
fi

OUT_DIR=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$OUT_DIR"
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /CPU: /' >&2
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine slows both sides)" >&2

common=(--lr 0.05 --reference-batch 128 --warmup 50 --epochs "$EPOCHS" --eval-batch 1000)
echo "== normlab sweep ($ARCH), $THREADS thread(s)" >&2
start=$(date +%s%N)
"$BUILD_DIR/experiments/normlab" sweep --dataset fashion-mnist --train-limit "$TRAIN_LIMIT" --over batch \
  --batch-sizes "$BATCH_SIZES" --seeds "$SEEDS" --norms "$NORMS" "${model[@]}" --activation relu \
  --momentum 0.9 --schedule cosine "${common[@]}" --threads "$THREADS" --out "$OUT_DIR/normlab" 2>&1 |
  sed -u 's/^/  /' >&2
normlab_ms=$(( ($(date +%s%N) - start) / 1000000 ))

files=("$OUT_DIR/normlab")
if (( have_torch )); then
  echo "== PyTorch ($ARCH), $THREADS thread(s)" >&2
  start=$(date +%s%N)
  "$PYTHON" bench/pytorch_protocol.py --arch "$ARCH" --train-limit "$TRAIN_LIMIT" --batch-sizes "$BATCH_SIZES" --seeds "$SEEDS" \
    --norms "$NORMS" "${common[@]}" --eval-last 3 --threads "$THREADS" --out "$OUT_DIR/pytorch.json" 2>&1 |
    sed -u 's/^/  /' >&2
  pytorch_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  files+=("$OUT_DIR/pytorch.json")
fi

echo >&2
"$PYTHON" bench/protocol.py ${MARKDOWN:+--markdown} "${files[@]}"
line="Process wall time (data loading included): normlab $((normlab_ms / 1000)).$(( normlab_ms % 1000 / 100 )) s"
(( have_torch )) && line+=", PyTorch $((pytorch_ms / 1000)).$(( pytorch_ms % 1000 / 100 )) s"
printf "\n%s\n" "$line"
echo "(results in $OUT_DIR)" >&2
if (( torch_missing )); then exit 3; fi

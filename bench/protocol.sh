#!/usr/bin/env bash
# The batch-size sweep protocol, normlab then PyTorch, one after the other on the same machine.
# ARCH=mlp (the default): Fashion-MNIST (first 20,000 training images, full test set), MLP
# 784-256-256-10 ReLU, SGD momentum 0.9, lr 0.05 x batch / 128 with 50 warmup steps then cosine,
# 5 epochs, 2 seeds, batch sizes 2..256, none/batch/layer (48 runs), one thread; normlab takes a
# few minutes, PyTorch about 10 on an idle machine.
# ARCH=cnn: the study's CNN (conv3x3 32 - norm - ReLU - maxpool 2 - conv3x3 64 - norm - ReLU -
# maxpool 2 - Linear 3136->10) on the first 10,000 training images, 3 epochs, 2 seeds, batch sizes
# 2..128, batch/layer/group (42 runs), the same optimizer and schedule (bench/results/ has the
# measured times: far longer than the MLP's).
# ARCH=lstm (protocol A): the LSTM classifier on row-sequential Fashion-MNIST (28 steps of 28
# pixels, one layer of 128 units, Linear on the last hidden state), the first 10,000 training images,
# 5 epochs, 2 seeds, batch sizes 2,4,8,32,128, none/layer/batch/batch-shared (40 runs); Adam lr 1e-3
# at batch 128 scaled by sqrt(batch / 128), the total gradient norm clipped to 1, 50 warmup steps at
# batch 128 (scaled to the same samples at every batch), cosine. PyTorch: bench/pytorch_protocol.py
# --arch lstm.
# ARCH=gpt (protocol B): the character GPT on Debian's fortunes (2 layers, 4 heads, width 128,
# block 64), 2,048,000 training tokens per run at every batch size (steps = round(tokens / (batch x
# 64))), AdamW (lr 3e-3 at every batch size, betas 0.9, 0.95, weight decay 0.1 on 2-D weights), a
# tenth of the steps as warmup then cosine, clipping at 1; batch sizes 1,2,4,16,64, 2 seeds,
# layer/layer-post/rms/batch/none (50 runs); the validation bits per character (BatchNorm also in
# training mode). The size and lr are what lets both sides run in about an hour on 2 cores while the
# best norm beats the 4-gram baseline (2.73 bits/char). PyTorch: bench/pytorch_lm_protocol.py.
# Every arch: the warmup given at batch 128 scaled to round(warmup x 128 / batch) steps and the
# final score the last epoch's, as normlab's sweep does.
# Prints the wall time of both per batch size (with the share spent in training steps; the GPT: the
# whole sweep's) and both result tables (mean ± the 95% confidence interval's half-width over seeds,
# as normlab's report), then PyTorch minus normlab per cell with Welch's 95% interval.
#
# Environment: ARCH (mlp), BUILD_DIR (build), OUT_DIR (a temporary directory by default; keeps the
# normlab sweep folder and pytorch.json), RESUME=1 (keep the runs OUT_DIR already holds from a stopped
# run of the same protocol, on both sides), THREADS (1), PROCESSES (1: runs side by side on each side,
# normlab's under mpirun, PyTorch's as that many script processes, each with THREADS threads),
# SIDES ("normlab pytorch"), MARKDOWN=1 for
# Markdown tables; smaller runs for a check: BATCH_SIZES, SEEDS, NORMS, and EPOCHS, TRAIN_LIMIT
# (mlp, cnn, lstm; lstm also HIDDEN) or TOKENS, LAYERS, HEADS, WIDTH, BLOCK, LR (gpt).
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
  lstm)
    BATCH_SIZES=${BATCH_SIZES:-2,4,8,32,128}
    EPOCHS=${EPOCHS:-5}
    TRAIN_LIMIT=${TRAIN_LIMIT:-10000}
    NORMS=${NORMS:-none,layer,batch,batch-shared}
    HIDDEN=${HIDDEN:-128} ;;
  gpt)
    for v in EPOCHS TRAIN_LIMIT HIDDEN; do
      if [ -n "${!v:-}" ]; then
        echo "bench/protocol.sh: $v does not apply to ARCH=gpt (its budget is TOKENS, its size LAYERS, HEADS, WIDTH, BLOCK)" >&2
        exit 2
      fi
    done
    BATCH_SIZES=${BATCH_SIZES:-1,2,4,16,64}
    TOKENS=${TOKENS:-2048000}
    NORMS=${NORMS:-layer,layer-post,rms,batch,none}
    LAYERS=${LAYERS:-2} HEADS=${HEADS:-4} WIDTH=${WIDTH:-128} BLOCK=${BLOCK:-64} LR=${LR:-0.003} ;;
  *)
    echo "bench/protocol.sh: ARCH is mlp, cnn, lstm or gpt, got '$ARCH'" >&2
    exit 2 ;;
esac
SEEDS=${SEEDS:-0,1}
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's python3 with python3-torch (a pyenv python3 on PATH has no torch)

if ! [[ $THREADS =~ ^[0-9]+$ ]] || (( THREADS < 1 )); then
  echo "bench/protocol.sh: THREADS must be a thread count of at least 1, got '$THREADS'" >&2
  exit 2
fi
PROCESSES=${PROCESSES:-1}
if ! [[ $PROCESSES =~ ^[0-9]+$ ]] || (( PROCESSES < 1 )); then
  echo "bench/protocol.sh: PROCESSES must be a process count of at least 1, got '$PROCESSES'" >&2
  exit 2
fi
launch=()
if (( PROCESSES > 1 )); then
  command -v mpirun >/dev/null || { echo "bench/protocol.sh: PROCESSES=$PROCESSES needs mpirun: apt-get install openmpi-bin" >&2; exit 2; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  launch=(mpirun --oversubscribe -np "$PROCESSES")
fi
for s in $SIDES; do
  [[ $s == normlab || $s == pytorch ]] || { echo "bench/protocol.sh: SIDES lists normlab and/or pytorch, got '$s'" >&2; exit 2; }
done
if [[ $SIDES != *normlab* ]]; then
  echo "bench/protocol.sh: SIDES must include normlab (the tables are built from its sweep folder)" >&2
  exit 2
fi
if [[ $ARCH == gpt ]]; then
  if [ ! -e /usr/share/games/fortunes/zippy ]; then
    echo "bench/protocol.sh: Debian's fortunes are missing: apt-get install fortunes" >&2
    exit 2
  fi
elif [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
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

# Both sides' flags: normlab's sweep (after the shared ones) and the PyTorch script's.
shared=(--batch-sizes "$BATCH_SIZES" --seeds "$SEEDS" --norms "$NORMS" --threads "$THREADS")
case $ARCH in
  mlp|cnn)
    common=(--lr 0.05 --reference-batch 128 --warmup 50 --epochs "$EPOCHS" --eval-batch 1000)
    normlab_flags=(--dataset fashion-mnist --train-limit "$TRAIN_LIMIT" "${model[@]}" --activation relu
                   --momentum 0.9 --schedule cosine "${common[@]}")
    # normlab's sweep scales the warmup with the batch and scores the last epoch (studies/sweep.cc)
    pytorch=(bench/pytorch_protocol.py --arch "$ARCH" --train-limit "$TRAIN_LIMIT" "${common[@]}" --scaled-warmup
             --eval-last 1)
    table_flags=(--ci) ;;
  lstm)
    common=(--lr 0.001 --reference-batch 128 --warmup 50 --epochs "$EPOCHS" --eval-batch 1000 --hidden "$HIDDEN")
    normlab_flags=(--dataset fashion-mnist --arch lstm --train-limit "$TRAIN_LIMIT" --optimizer adam
                   --lr-scaling sqrt --clip-grad-norm 1 --schedule cosine "${common[@]}")
    pytorch=(bench/pytorch_protocol.py --arch lstm --train-limit "$TRAIN_LIMIT" "${common[@]}" --lr-scaling sqrt
             --scaled-warmup --clip-grad-norm 1 --eval-last 1)
    table_flags=(--ci) ;;
  gpt)
    common=(--train-tokens "$TOKENS" --layers "$LAYERS" --heads "$HEADS" --width "$WIDTH" --block-size "$BLOCK"
            --lr "$LR")
    normlab_flags=(--dataset text --arch gpt "${common[@]}")
    pytorch=(bench/pytorch_lm_protocol.py "${common[@]}")
    table_flags=(--ci) ;;
esac

echo "== normlab sweep ($ARCH), $PROCESSES process(es) of $THREADS thread(s)" >&2
start=$(date +%s%N)
resume=()
[[ ${RESUME:-} == 1 ]] && resume=(--resume)
"${launch[@]}" "$BUILD_DIR/experiments/normlab" sweep --over batch "${normlab_flags[@]}" "${shared[@]}" "${resume[@]}" --out "$OUT_DIR/normlab" 2>&1 |
  sed -u 's/^/  /' >&2
normlab_ms=$(( ($(date +%s%N) - start) / 1000000 ))

files=("$OUT_DIR/normlab")
if (( have_torch )); then
  echo "== PyTorch ($ARCH), $PROCESSES process(es) of $THREADS thread(s)" >&2
  start=$(date +%s%N)
  pids=()
  for ((k = 0; k < PROCESSES; k++)); do
    out=$OUT_DIR/pytorch.json
    (( PROCESSES > 1 )) && out=$OUT_DIR/pytorch_$k.json
    "$PYTHON" "${pytorch[@]}" "${shared[@]}" "${resume[@]}" --shard "$k/$PROCESSES" --out "$out" 2>&1 |
      sed -u 's/^/  /' >&2 &
    pids+=($!)
    files+=("$out")
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  pytorch_ms=$(( ($(date +%s%N) - start) / 1000000 ))
fi

echo >&2
"$PYTHON" bench/protocol.py ${MARKDOWN:+--markdown} "${table_flags[@]}" "${files[@]}"
line="Process wall time (data loading included): normlab $((normlab_ms / 1000)).$(( normlab_ms % 1000 / 100 )) s"
(( have_torch )) && line+=", PyTorch $((pytorch_ms / 1000)).$(( pytorch_ms % 1000 / 100 )) s"
printf "\n%s\n" "$line"
echo "(results in $OUT_DIR)" >&2
if (( torch_missing )); then exit 3; fi

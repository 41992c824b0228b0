#!/usr/bin/env bash
# Output identity for refactors: runs a fixed list of normlab commands and compares every CSV file
# they write, byte for byte, with the files of another build (e.g. the commit before a refactor).
#
#   scripts/check-outputs.sh run NORMLAB DIR      run the commands with this binary, outputs in DIR
#   scripts/check-outputs.sh compare DIR_A DIR_B  cmp every *.csv and *.out of DIR_A with DIR_B's; exit 1 on
#                                                 a difference or a missing file
#   scripts/check-outputs.sh against REF NORMLAB  run, then compare with REF (a DIR made by `run`)
#
# A typical refactor: build the commit before it in a worktree, `run` it once into a reference
# folder, then `against` that folder after every commit. The commands cover train, compare, sweep
# (over batch and over lr), study --quick, a CNN comparison on Fashion-MNIST, eval, predict and,
# when mpirun is installed, a 2-rank distributed sweep; the LSTM classifier's train, compare and
# sweep; the character GPT's and LSTM's train, eval and generate, the GPT's compare and sweep and a
# 2-rank text sweep. The CSV files are compared, and the printed output of eval and generate (kept
# as *.out): reports and manifests hold timings, the commit and the command line. About 30 s on 2 cores.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
fixtures="$here/tests/experiments/fixtures"
fashion=/usr/share/datasets/fashion-mnist

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

run_all() {
  local nl="$1" out="$2"
  [ -x "$nl" ] || { echo "check-outputs: $nl is not an executable normlab binary" >&2; exit 2; }
  rm -rf "$out" && mkdir -p "$out"
  local q=(--quiet --threads 2)
  echo "check-outputs: running the commands of $nl into $out" >&2
  "$nl" train --quick "${q[@]}" --eval-every 20 --out "$out/train"
  "$nl" train "${q[@]}" --csv "$fixtures/iris_like.csv" --label species --norm batch --epochs 20 \
    --batch-size 16 --out "$out/train-csv"
  "$nl" train "${q[@]}" --csv "$fixtures/regression.csv" --csv-comment '#' --label price --task regression \
    --epochs 10 --batch-size 16 --optimizer adamw --schedule step --step-every 20 --out "$out/train-regression"
  "$nl" compare --quick "${q[@]}" --out "$out/compare"
  "$nl" compare --quick "${q[@]}" --optimizer adam --norms layer,group,rms --groups 4 --out "$out/compare-adam"
  "$nl" sweep --quick "${q[@]}" --out "$out/sweep"
  "$nl" sweep --quick "${q[@]}" --over lr --out "$out/sweep-lr"
  "$nl" study --quick "${q[@]}" --out "$out/study"
  if [ -f "$fashion/train-images-idx3-ubyte.gz" ]; then
    "$nl" compare "${q[@]}" --dataset fashion-mnist --arch cnn --model conv8k3p1-norm-act-maxpool2 \
      --train-limit 600 --test-limit 300 --epochs 1 --batch-size 32 --norms none,batch,layer --seeds 0 \
      --out "$out/cnn-compare"
    "$nl" train "${q[@]}" --dataset fashion-mnist --train-limit 2000 --test-limit 500 --epochs 1 --hidden 32 \
      --norm layer --out "$out/train-fashion"
    "$nl" eval "${q[@]}" --checkpoint "$out/train-fashion/model.safetensors" --out "$out/eval-fashion"
  fi
  sequence_models "$nl" "$out"
  "$nl" eval "${q[@]}" --checkpoint "$out/train-csv/model.safetensors" --csv "$fixtures/iris_like.csv" \
    --out "$out/eval-csv"
  "$nl" predict --quiet --checkpoint "$out/train-csv/model.safetensors" --csv "$fixtures/iris_like.csv" \
    --out "$out/predict/predictions.csv"
  local mpiexec
  mpiexec="$(command -v mpiexec || command -v mpirun || true)"
  if [ -n "$mpiexec" ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
      "$mpiexec" --oversubscribe -np 2 "$nl" sweep --distributed --quick --quiet --threads 1 --out "$out/ddp-sweep"
  fi
}

# The sequence models: the LSTM classifier on Fashion-MNIST (when installed), and the character
# language models (GPT and LSTM) on the repository's small text file: train, compare, sweep, eval,
# generate (its stdout kept as generate.out) and, when mpirun is installed, a 2-rank text sweep.
sequence_models() {
  local nl="$1" out="$2" q=(--quiet --threads 2)
  local text="$here/tests/data/fixtures/text_sample.txt"
  local gpt=(--layers 1 --width 32 --heads 2 --block-size 16)
  if [ -f "$fashion/train-images-idx3-ubyte.gz" ]; then
    "$nl" train "${q[@]}" --arch lstm --norm layer --optimizer adam --epochs 1 --train-limit 300 --test-limit 300 \
      --hidden 32 --stats-every 5 --out "$out/train-lstm"
    "$nl" compare "${q[@]}" --arch lstm --norms none,layer,batch,batch-shared --train-limit 300 --test-limit 300 \
      --epochs 1 --seeds 0,1 --hidden 16 --out "$out/lstm-compare"
    "$nl" sweep "${q[@]}" --arch lstm --norms none,batch --batch-sizes 8,32 --train-limit 256 --test-limit 200 \
      --epochs 1 --seeds 0 --hidden 16 --out "$out/lstm-sweep"
  fi
  "$nl" train "${q[@]}" --dataset text --text "$text" "${gpt[@]}" --steps 20 --out "$out/text-gpt"
  "$nl" train "${q[@]}" --dataset text --text "$text" --norm rms --position post --layers 2 --width 32 --heads 2 \
    --block-size 16 --steps 10 --out "$out/text-gpt-post"
  "$nl" train "${q[@]}" --dataset text --text "$text" --arch lstm --hidden 32 --width 16 --block-size 16 \
    --steps 10 --out "$out/text-lstm"
  "$nl" eval "${q[@]}" --checkpoint "$out/text-gpt/model.safetensors" > "$out/text-gpt/eval.out"
  "$nl" generate --checkpoint "$out/text-gpt/model.safetensors" --prompt "The " --tokens 40 --seed 1 \
    > "$out/text-gpt/generate.out"
  "$nl" generate --checkpoint "$out/text-lstm/model.safetensors" --prompt "a" --tokens 30 --seed 2 \
    --temperature 0.7 > "$out/text-lstm/generate.out"
  "$nl" compare "${q[@]}" --dataset text --text "$text" --norms layer,layer-post,rms,batch,none --seeds 0,1 \
    "${gpt[@]}" --steps 20 --out "$out/text-compare"
  "$nl" sweep "${q[@]}" --dataset text --text "$text" --batch-sizes 2,8 --norms layer,batch --train-tokens 4096 \
    "${gpt[@]}" --out "$out/text-sweep"
  local mpiexec
  mpiexec="$(command -v mpiexec || command -v mpirun || true)"
  if [ -n "$mpiexec" ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
      "$mpiexec" --oversubscribe -np 2 "$nl" sweep --quiet --threads 1 --dataset text --text "$text" \
      --batch-sizes 2,8 --norms layer,batch --train-tokens 2048 "${gpt[@]}" --out "$out/text-ddp-sweep"
  fi
}

compare_dirs() {
  local a="$1" b="$2" n=0 bad=0
  [ -d "$a" ] && [ -d "$b" ] || { echo "check-outputs: compare needs two folders made by 'run'" >&2; exit 2; }
  while IFS= read -r f; do
    n=$((n + 1))
    if [ ! -f "$b/$f" ]; then echo "MISSING in $b: $f"; bad=$((bad + 1))
    elif ! cmp -s "$a/$f" "$b/$f"; then echo "DIFFERS: $f"; bad=$((bad + 1)); fi
  done < <(cd "$a" && find . -name '*.csv' -o -name '*.out' | sort)
  while IFS= read -r f; do
    [ -f "$a/$f" ] || { echo "EXTRA in $b: $f"; bad=$((bad + 1)); }
  done < <(cd "$b" && find . -name '*.csv' -o -name '*.out' | sort)
  [ "$n" -gt 0 ] || { echo "check-outputs: no CSV files in $a" >&2; exit 2; }
  if [ "$bad" -eq 0 ]; then echo "check-outputs: $n CSV and output files byte-identical"; else
    echo "check-outputs: $bad of $n CSV and output files differ or are missing"; exit 1; fi
}

case "${1:-}" in
  run) [ $# -eq 3 ] || usage; run_all "$2" "$3" ;;
  compare) [ $# -eq 3 ] || usage; compare_dirs "$2" "$3" ;;
  against) [ $# -eq 3 ] || usage; tmp="$(mktemp -d)"; run_all "$3" "$tmp/out"; compare_dirs "$2" "$tmp/out"
           rm -rf "$tmp" ;;
  *) usage ;;
esac

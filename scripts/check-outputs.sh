#!/usr/bin/env bash
# Output identity for refactors: runs a fixed list of normlab commands and compares every CSV file
# they write, byte for byte, with the files of another build (e.g. the commit before a refactor).
#
#   scripts/check-outputs.sh run NORMLAB DIR      run the commands with this binary, outputs in DIR
#   scripts/check-outputs.sh compare DIR_A DIR_B  cmp every *.csv of DIR_A with DIR_B's; exit 1 on
#                                                 a difference or a missing file
#   scripts/check-outputs.sh against REF NORMLAB  run, then compare with REF (a DIR made by `run`)
#
# A typical refactor: build the commit before it in a worktree, `run` it once into a reference
# folder, then `against` that folder after every commit. The commands cover train, compare, sweep
# (over batch and over lr), study --quick, a CNN comparison on Fashion-MNIST, eval, predict and,
# when mpirun is installed, a 2-rank distributed sweep. Only the CSV files are compared: reports and
# manifests hold timings, the commit and the command line. About 2 minutes on 2 cores.
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

compare_dirs() {
  local a="$1" b="$2" n=0 bad=0
  [ -d "$a" ] && [ -d "$b" ] || { echo "check-outputs: compare needs two folders made by 'run'" >&2; exit 2; }
  while IFS= read -r f; do
    n=$((n + 1))
    if [ ! -f "$b/$f" ]; then echo "MISSING in $b: $f"; bad=$((bad + 1))
    elif ! cmp -s "$a/$f" "$b/$f"; then echo "DIFFERS: $f"; bad=$((bad + 1)); fi
  done < <(cd "$a" && find . -name '*.csv' | sort)
  while IFS= read -r f; do
    [ -f "$a/$f" ] || { echo "EXTRA in $b: $f"; bad=$((bad + 1)); }
  done < <(cd "$b" && find . -name '*.csv' | sort)
  [ "$n" -gt 0 ] || { echo "check-outputs: no CSV files in $a" >&2; exit 2; }
  if [ "$bad" -eq 0 ]; then echo "check-outputs: $n CSV files byte-identical"; else
    echo "check-outputs: $bad of $n CSV files differ or are missing"; exit 1; fi
}

case "${1:-}" in
  run) [ $# -eq 3 ] || usage; run_all "$2" "$3" ;;
  compare) [ $# -eq 3 ] || usage; compare_dirs "$2" "$3" ;;
  against) [ $# -eq 3 ] || usage; tmp="$(mktemp -d)"; run_all "$3" "$tmp/out"; compare_dirs "$2" "$tmp/out"
           rm -rf "$tmp" ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# mpirun -np W normlab compare|sweep|study (W = 2, 3) splits the runs over the processes and writes
# the same CSV files, byte for byte, as one process (also compare and sweep --dataset text, W = 2);
# and normlab train --distributed trains one model over 2 processes.
# Usage: split_runs.sh NORMLAB MPIEXEC SCRATCH
set -euo pipefail
normlab=$1 mpiexec=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

# same_csv ONE SPLIT WHAT: every CSV file under ONE (one process) is in SPLIT with the same bytes.
same_csv() {
  local count=0 f
  while IFS= read -r f; do
    cmp "$1/$f" "$2/$f" || { echo "FAIL: $3: $f differs"; exit 1; }
    count=$((count + 1))
  done < <(cd "$1" && find . -name '*.csv')
  [ "$count" -gt 0 ] || { echo "FAIL: $3: no CSV file written"; exit 1; }
  echo "$3: $count CSV files identical to one process"
}
for cmd in compare sweep study; do
  "$normlab" "$cmd" --quick --quiet --out "$dir/$cmd-1"
  for np in 2 3; do
    "$mpiexec" --oversubscribe -np "$np" "$normlab" "$cmd" --quick --quiet --threads 1 --out "$dir/$cmd-$np"
    same_csv "$dir/$cmd-1" "$dir/$cmd-$np" "$cmd on $np processes"
  done
done
# The character GPT's compare and sweep split their runs likewise (a tiny model on the sample text).
sample="$(cd "$(dirname "$0")/../data/fixtures" && pwd)/text_sample.txt"
tiny=(--dataset text --text "$sample" --norms layer,batch --seeds 0,1 --layers 1 --width 16 --heads 2 --block-size 8 --quiet)
for cmd in compare sweep; do
  sizes=(--steps 10)
  [ "$cmd" = sweep ] && sizes=(--batch-sizes 2,4 --train-tokens 512)
  "$normlab" "$cmd" "${tiny[@]}" "${sizes[@]}" --out "$dir/text-$cmd-1"
  "$mpiexec" --oversubscribe -np 2 "$normlab" "$cmd" "${tiny[@]}" "${sizes[@]}" --threads 1 --out "$dir/text-$cmd-2"
  same_csv "$dir/text-$cmd-1" "$dir/text-$cmd-2" "$cmd --dataset text on 2 processes"
done
# One model over two processes: rank 0 writes the results, the manifest says so.
"$mpiexec" --oversubscribe -np 2 "$normlab" train --quick --quiet --distributed --norm syncbatch --out "$dir/ddp"
test -f "$dir/ddp/model.safetensors"
grep -q '"distributed_ranks": 2' "$dir/ddp/manifest.json" || { echo "FAIL: no distributed_ranks in the manifest"; exit 1; }
# Without mpirun, --distributed says how to start it (exit 2, a usage error).
if "$normlab" train --quick --distributed --out "$dir/none" 2> "$dir/err.txt"; then echo "FAIL: --distributed ran alone"; exit 1; fi
grep -q "mpirun -np 2 normlab train --distributed" "$dir/err.txt"
rm -rf "$dir"
echo "ok"

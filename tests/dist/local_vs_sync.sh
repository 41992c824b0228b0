#!/usr/bin/env bash
# mpirun -np W normlab sweep --distributed (the local-BatchNorm vs SyncBatchNorm experiment): over 2
# ranks, SyncBatchNorm, LayerNorm and GroupNorm score what one process scores at the global batch;
# the same experiment on 4 processes (two groups of 2 training side by side) writes the same CSV
# files byte for byte; bad --ranks and flags are usage errors. Usage: local_vs_sync.sh NORMLAB MPIEXEC SCRATCH
set -euo pipefail
normlab=$1 mpiexec=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
"$mpiexec" --oversubscribe -np 2 "$normlab" sweep --distributed --quick --quiet --threads 1 --out "$dir/np2"
for f in report.md summary.csv runs.csv epochs.csv records.json manifest.json; do
  test -s "$dir/np2/$f" || { echo "FAIL: no $f"; exit 1; }
done
grep -q "SyncBatchNorm, 2 ranks" "$dir/np2/report.md"
grep -q "^\*\*Reading.\*\* At 2 ranks: .*SyncBatchNorm is on average" "$dir/np2/report.md"
# summary.csv: norm,ranks,per_rank_batch,global_batch,runs,diverged,test_acc_n,test_acc_mean,...
# Each norm over 2 ranks at per-rank batch b against one process at 2b (SyncBatchNorm: BatchNorm).
awk -F, 'NR > 1 { acc[$1 "," $2 "," $4] = $8; if ($2 == 2) over2[$1 "," $4] = $8 }
  END {
    n = 0
    for (k in over2) {
      split(k, p, ","); one = (p[1] == "syncbatch" ? "batch" : p[1]) ",1," p[2]
      if (p[1] == "batch") continue  # local statistics: not the global batch
      if (!(one in acc)) { print "FAIL: no one-process run for " k; exit 1 }
      d = over2[k] - acc[one]; if (d < 0) d = -d
      if (d > 0.01) { print "FAIL: " k " over 2 ranks " over2[k] " vs one process " acc[one]; exit 1 }
      n++
    }
    if (n != 9) { print "FAIL: expected 9 comparisons, got " n; exit 1 }
    print "2 ranks vs one process at the global batch: " n " cells within 1 point"
  }' "$dir/np2/summary.csv"
# --resume takes every run from the records (in their groups or not) and writes the same files.
cp -r "$dir/np2" "$dir/again"
"$mpiexec" --oversubscribe -np 2 "$normlab" sweep --distributed --quick --quiet --threads 1 --resume --out "$dir/again"
total=$(grep -o '"runs_total": [0-9]*' "$dir/again/manifest.json" | grep -o '[0-9]*$')
grep -q "\"runs_reused\": $total," "$dir/again/manifest.json" || { echo "FAIL: --resume retrained runs:"; grep runs_ "$dir/again/manifest.json"; exit 1; }
echo "--resume: all $total runs from the records"

for f in summary.csv runs.csv epochs.csv; do cmp "$dir/np2/$f" "$dir/again/$f"; done
# 4 processes, runs over 2 ranks each: two groups side by side, the same results.
"$mpiexec" --oversubscribe -np 4 "$normlab" sweep --distributed --quick --quiet --threads 1 --ranks 1,2 --out "$dir/np4"
for f in summary.csv runs.csv epochs.csv; do
  cmp "$dir/np2/$f" "$dir/np4/$f" || { echo "FAIL: $f differs between 2 and 4 processes"; exit 1; }
done
echo "4 processes in groups of 2: CSV files identical to 2 processes"
# Usage errors: exit status 2, one message, nothing written.
expect_usage_error() {  # expected-text command...
  local want=$1; shift
  set +e; "$@" > "$dir/out.txt" 2> "$dir/err.txt"; local rc=$?; set -e
  [ "$rc" -eq 2 ] || { echo "FAIL: exit $rc, expected 2: $*"; cat "$dir/err.txt"; exit 1; }
  grep -qF -- "$want" "$dir/err.txt" || { echo "FAIL: no '$want' in:"; cat "$dir/err.txt"; exit 1; }
  [ "$(grep -c 'normlab: error' "$dir/err.txt")" -eq 1 ] || { echo "FAIL: not one error message"; cat "$dir/err.txt"; exit 1; }
}
expect_usage_error "each number of ranks must divide 2" \
  "$mpiexec" --oversubscribe -np 2 "$normlab" sweep --distributed --quick --ranks 4 --out "$dir/bad"
expect_usage_error "needs more than one sample per rank" \
  "$mpiexec" --oversubscribe -np 2 "$normlab" sweep --distributed --quick --ranks 2 --batch-sizes 1,2 --out "$dir/bad"
expect_usage_error "needs more than one sample per rank" \
  "$mpiexec" --oversubscribe -np 2 "$normlab" train --distributed --quick --batch-size 2 --norm batch --out "$dir/bad"
expect_usage_error "give --batch-sizes of 2 or more" \
  "$mpiexec" --oversubscribe -np 2 "$normlab" sweep --distributed --quick --batch-sizes 1,2 --out "$dir/bad"
expect_usage_error "start it as mpirun -np 2 normlab sweep --distributed" "$normlab" sweep --distributed --quick --out "$dir/bad"
expect_usage_error "--ranks goes with --distributed" "$normlab" sweep --quick --ranks 2 --out "$dir/bad"
expect_usage_error "--distributed cannot be used with --over lr" \
  "$mpiexec" --oversubscribe -np 2 "$normlab" sweep --distributed --quick --over lr --out "$dir/bad"
test ! -e "$dir/bad" || { echo "FAIL: a refused command wrote $dir/bad"; exit 1; }
rm -rf "$dir"
echo "ok"

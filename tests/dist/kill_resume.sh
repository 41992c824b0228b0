#!/usr/bin/env bash
# Every rank's finished runs survive a kill -9 of the whole job: mpirun -np 2 normlab sweep, killed
# (SIGKILL to mpirun) once each rank has journaled runs in its own partial folder beside --out
# (a rank may journal a run more while it dies: the resume takes it too);
# `--resume` started at once (the killed ranks may still be dying) takes every journaled run of
# both ranks, trains only the others, and writes CSV files byte for byte those of an uninterrupted
# job. Usage: kill_resume.sh NORMLAB MPIEXEC SCRATCH
set -euo pipefail
normlab=$1 mpiexec=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# 12 runs of 0.05 to 0.6 s: the batch-2 runs are the long ones.
args=(sweep --quick --seeds 0,1 --batch-sizes 2,4 --epochs 30 --threads 1 --quiet)
"$mpiexec" --oversubscribe -np 2 "$normlab" "${args[@]}" --out "$dir/whole" > /dev/null
"$mpiexec" --oversubscribe -np 2 "$normlab" "${args[@]}" --out "$dir/s" > "$dir/out.txt" 2> "$dir/err.txt" &
job=$!
# The run indices journaled in partial folder $1.
journaled() { grep -o '"index":[0-9]*' "$1/finished-runs.jsonl" 2> /dev/null | cut -d: -f2 | sort -n | tr '\n' ' '; }
both=""
for _ in $(seq 1 2400); do
  n=0
  for p in "$dir"/.s.normlab-partial-*; do [ -n "$(journaled "$p")" ] && n=$((n + 1)); done
  [ "$n" -ge 2 ] && { both=1; break; }
  sleep 0.05
done
[ -n "$both" ] || { echo "FAIL: the two ranks did not both journal a run within 120 s"; kill -9 "$job"; exit 1; }
kill -9 "$job"
wait "$job" 2> /dev/null || true
# What the ranks had journaled when the job was killed (a dying rank may add one more).
before=()
for p in "$dir"/.s.normlab-partial-*; do
  echo "$(basename "$p"): runs $(journaled "$p")"
  for i in $(journaled "$p"); do before+=("$i"); done
done
[ ! -e "$dir/s" ] || { echo "FAIL: the killed job wrote its results"; exit 1; }
"$mpiexec" --oversubscribe -np 2 "$normlab" "${args[@]}" --out "$dir/s" --resume > /dev/null
reused=$(grep -o '"runs_reused": *[0-9]*' "$dir/s/manifest.json" | grep -o '[0-9]*$')
echo "${#before[@]} runs journaled by the killed job (both ranks); --resume took $reused, trained $((12 - reused))"
[ "$reused" -ge "${#before[@]}" ] || { echo "FAIL: --resume retrained runs the killed job had finished"; exit 1; }
for f in summary.csv runs.csv epochs.csv; do
  cmp "$dir/whole/$f" "$dir/s/$f" || { echo "FAIL: $f differs from the uninterrupted job's"; exit 1; }
done
if compgen -G "$dir/.s.normlab-partial-*" > /dev/null; then echo "FAIL: the killed ranks' folders were left"; exit 1; fi
rm -rf "$dir"
echo "ok"

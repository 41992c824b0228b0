#!/usr/bin/env bash
# A rank that dies ends the whole job: mpirun -np 2 normlab train --distributed, one rank killed
# with SIGKILL mid-training; the other must not hang in a collective. Checks that mpirun exits
# non-zero within 30 s, says which rank died, and that no result folder was written (the partial
# folder beside --out is all that remains). Usage: kill_rank.sh NORMLAB MPIEXEC SCRATCH
set -euo pipefail
normlab=$1 mpiexec=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# Long enough to be killed mid-training (minutes if left alone).
"$mpiexec" --oversubscribe -np 2 "$normlab" train --distributed --quick --epochs 100000 --norm syncbatch \
  --threads 1 --quiet --out "$dir/run" > "$dir/out.txt" 2> "$dir/err.txt" &
job=$!
# The normlab processes whose parent is $1, from /proc (no procps needed).
children() {
  local s pid comm state ppid rest
  for s in /proc/[0-9]*/stat; do
    read -r pid comm state ppid rest < "$s" 2> /dev/null || continue
    [ "$ppid" = "$1" ] && [ "$comm" = "(normlab)" ] && echo "$pid"
  done
  return 0
}
stop_all() { kill -9 $(children "$job") "$job" 2> /dev/null || true; }
# Wait for the training to start: rank 0's partial result folder appears beside --out.
for _ in $(seq 1 300); do
  compgen -G "$dir/.run.normlab-partial-*" > /dev/null && break
  sleep 0.1
done
compgen -G "$dir/.run.normlab-partial-*" > /dev/null || { echo "FAIL: the job did not start"; stop_all; exit 1; }
sleep 1
ranks=$(children "$job")
[ "$(echo "$ranks" | wc -w)" -eq 2 ] || { echo "FAIL: expected 2 rank processes under mpirun, got: $ranks"; stop_all; exit 1; }
victim=$(echo "$ranks" | tail -n 1)
start=$(date +%s%N)
kill -9 "$victim"
for _ in $(seq 1 300); do
  kill -0 "$job" 2> /dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2> /dev/null; then
  echo "FAIL: the job still runs 30 s after a rank was killed"
  stop_all; exit 1
fi
set +e; wait "$job"; rc=$?; set -e
took_ms=$((($(date +%s%N) - start) / 1000000))
[ "$rc" -ne 0 ] || { echo "FAIL: mpirun exited 0 after a rank was killed"; exit 1; }
grep -qiE "signal 9|killed" "$dir/err.txt" || { echo "FAIL: no word of the killed rank:"; cat "$dir/err.txt"; exit 1; }
test ! -e "$dir/run" || { echo "FAIL: a result folder was written"; exit 1; }
for r in $ranks; do
  if [ -e "/proc/$r" ] && ! grep -q "^State:.*Z" "/proc/$r/status" 2> /dev/null; then echo "FAIL: rank process $r outlived the job"; exit 1; fi
done
echo "a killed rank ended the job in ${took_ms} ms (exit status $rc), no result folder written"
rm -rf "$dir"
echo "ok"

#!/usr/bin/env bash
# Runs every libFuzzer harness (fuzz/*_fuzz.cc) for FUZZ_SECONDS seconds each (default 60), from
# the seeds in fuzz/seeds/<name> plus what earlier runs found (BUILD/fuzz-corpus/<name>), and
# prints each one's executions, executions per second and coverage. A crash, a leak, an
# exception other than normlab::Error, more than 2 GiB of memory or one allocation over 512 MiB
# is a finding: the input is kept as BUILD/fuzz-findings/<name>-*, its log printed, exit status 1.
# Usage: fuzz/run.sh [BUILD_DIR] [NAMES...]   (make fuzz builds BUILD_DIR=build-fuzz first)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(safetensors csv idx cli)
seconds=${FUZZ_SECONDS:-60}
case "$seconds" in ''|*[!0-9]*|0) echo "fuzz/run.sh: FUZZ_SECONDS must be a whole number of seconds >= 1, got '$seconds'" >&2; exit 2 ;; esac

mkdir -p "$build/fuzz-findings"
status=0
for name in "${names[@]}"; do
  bin="$build/fuzz/fuzz_$name"
  [ -x "$bin" ] || { echo "fuzz/run.sh: $bin is missing (build it: make fuzz)" >&2; exit 2; }
  corpus="$build/fuzz-corpus/$name"
  mkdir -p "$corpus"
  log="$build/fuzz-$name.log"
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=20 -print_final_stats=1 \
         -artifact_prefix="$build/fuzz-findings/$name-" "$corpus" "fuzz/seeds/$name" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  printf 'fuzz %-12s %s s: %s executions, %s per second, coverage %s edges, corpus %s files: %s\n' \
         "$name" "$seconds" "${runs:-?}" "${rate:-?}" "${cov:-?}" "$(ls "$corpus" | wc -l)" \
         "$([ $rc -eq 0 ] && echo "no finding" || echo "FINDING (exit $rc)")"
  if [ $rc -ne 0 ]; then
    status=1
    grep -v '^#' "$log" | tail -60
  fi
done
exit $status

#!/usr/bin/env bash
# The long run of the training difftest on a machine with many cores: `train_difftest` in JOBS processes
# side by side, each on its share of the seeds (FIRST, FIRST + JOBS, ...), their failures kept in one
# folder, their summaries printed at the end.
#
#   tests/train_difftest/run_many.sh [--binary PATH] [--jobs N] [--cases N] [--first S] [--keep DIR] [--log DIR]
#
# Defaults: build/tests/train_difftest/train_difftest, one job per core, 10000 cases from seed 1,
# ./train-difftest-failures, logs in ./train-difftest-logs. Exits 1 when a job found a mismatch.
set -euo pipefail
binary=build/tests/train_difftest/train_difftest
jobs=$(nproc)
cases=10000
first=1
keep=train-difftest-failures
logs=train-difftest-logs
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --first) first=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --log) logs=$2; shift 2 ;;
    *) echo "run_many.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$logs"
start=$(date +%s)
pids=()
for ((j = 0; j < jobs; ++j)); do
  # Job j takes a contiguous block of seeds, so that the logs read in order.
  per=$(((cases + jobs - 1) / jobs))
  from=$((first + j * per))
  count=$((cases - j * per < per ? cases - j * per : per))
  [ "$count" -le 0 ] && break
  "$binary" --first "$from" --cases "$count" --no-regressions --keep "$keep" -v >"$logs/job-$j.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
echo "run_many.sh: $cases cases from seed $first in $(($(date +%s) - start)) s on $jobs jobs"
grep -h "^train_difftest: [0-9]* cases" "$logs"/job-*.log | sed 's/^/  /'
grep -h -A3 "largest measured" "$logs"/job-*.log | grep -v "largest measured\|^--" | sort | sed "s/^/  /"
grep -h "^  FAILED" "$logs"/job-*.log || true
exit $status

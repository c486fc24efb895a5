#!/usr/bin/env bash
# Prints what a failed fuzzer run needs to be reproduced somewhere else, since CI's machine and its
# build-fuzz/ are gone when the run is read: the crash report from the fuzzer's log (the sanitizer's
# or libFuzzer's stack trace), and each reproducer as base64, which `base64 -d > crash` turns back into
# the input.
#
#   tests/fuzz/report_failure.sh LOG FUZZER WORKDIR [REPRODUCER...]
#
# FUZZER (the fuzz binary, run from WORKDIR as the fuzz script ran it) first shrinks each reproducer with
# libFuzzer's -minimize_crash for up to PIPEC_FUZZ_MINIMIZE_SECONDS (30): a mutated spec is often tens of
# kilobytes of copied fragments, of which a few lines matter.
#
# It ends with a "gist" section (between "---- gist" and "---- end of gist"): the report's first line,
# its first frames and the smallest reproducer. scripts/test.sh prints every failed job's gist again
# after its table of jobs, so the end of a CI log, which may be all that is kept, says what failed.
set -uo pipefail

log="$1"
fuzzer="$2"
workdir="$3"
shift 3
minimize_seconds="${PIPEC_FUZZ_MINIMIZE_SECONDS:-30}"

report_regex='==[0-9]+== ?ERROR|runtime error:|deadly signal|ALARM: working on the last Unit|out-of-memory|Slowest unit: '
start=""
if [ -f "$log" ]; then
  # From the first report line ("==PID==ERROR: ...", a UBSan "runtime error:", libFuzzer's "deadly
  # signal", timeout, out-of-memory, or a unit slower than the fuzz script's bound, which libFuzzer
  # writes as slow-unit-* without stopping) to 60 lines after it: the stack is there.
  start="$(grep -n -m 1 -E "$report_regex" "$log" | cut -d: -f1)"
  if [ -n "$start" ]; then
    echo "---- the report, from $log:$start"
    tail -n +"$start" "$log" | head -n 60
  fi
fi

smallest=""
for f in "$@"; do
  [ -f "$f" ] || continue
  shown="$f"
  if [ -x "$fuzzer" ] && [ "$minimize_seconds" -gt 0 ]; then
    # Leaks and timeouts are found again by the same run; out-of-memory inputs too (the limits are
    # repeated). A reproducer that no longer fails when run alone keeps its original form.
    (cd "$workdir" && ulimit -s 65536 2>/dev/null
     ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
       timeout $((minimize_seconds + 30)) "$fuzzer" -minimize_crash=1 -max_total_time="$minimize_seconds" \
         -timeout=25 -rss_limit_mb=2048 -exact_artifact_path="$f.min" "$f") >"$f.min.log" 2>&1
    if [ -s "$f.min" ] && [ "$(stat -c %s "$f.min")" -lt "$(stat -c %s "$f")" ]; then
      shown="$f.min"
    fi
  fi
  for g in $(printf '%s\n' "$f" "$shown" | sort -u); do
    size="$(stat -c %s "$g")"
    if [ "$size" -le 65536 ]; then
      echo "---- reproducer $(basename "$g") ($size bytes), as base64 (base64 -d > crash):"
      base64 -w 120 "$g"
    else
      echo "---- reproducer $(basename "$g") ($size bytes): too large to print"
    fi
  done
  if [ -z "$smallest" ] || [ "$(stat -c %s "$shown")" -lt "$(stat -c %s "$smallest")" ]; then
    smallest="$shown"
  fi
done
echo "---- free disk where the fuzzer ran: $(df -h "$(dirname "$log")" 2>/dev/null | awk 'NR == 2 {print $4}')"

echo "---- gist"
if [ -n "$start" ]; then
  tail -n +"$start" "$log" | head -n 1 | cut -c1-300
  # The first frames that are the project's code, not the sanitizer's or libFuzzer's.
  tail -n +"$start" "$log" | head -n 60 | grep -E '^ *#[0-9]+ ' | grep -vE 'fuzzer::|libFuzzer|compiler-rt|sanitizer_common|/asan/|/ubsan/|libc\.so|__libc_start| in main | in _start |__interceptor_' |
    head -n 4 | cut -c1-300
  grep -m 1 -E '^SUMMARY: ' "$log" | cut -c1-300
else
  echo "no sanitizer or libFuzzer report in $log"
fi
if [ -n "$smallest" ]; then
  size="$(stat -c %s "$smallest")"
  if [ "$size" -le 2048 ]; then
    echo "reproducer $(basename "$smallest") ($size bytes), base64: $(base64 -w 0 "$smallest")"
  else
    echo "reproducer $(basename "$smallest") ($size bytes): its base64 is above"
  fi
fi
echo "---- end of gist"

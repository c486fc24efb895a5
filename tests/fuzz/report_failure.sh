#!/usr/bin/env bash
# Prints what a failed fuzzer run needs to be reproduced somewhere else, since CI's machine and its
# build-fuzz/ are gone when the run is read: the crash report from the fuzzer's log (the sanitizer's
# or libFuzzer's stack trace), and each reproducer as base64, which `base64 -d > crash` turns back into
# the input.
#
#   tests/fuzz/report_failure.sh LOG [REPRODUCER...]
set -uo pipefail

log="$1"
shift
if [ -f "$log" ]; then
  # From the first report line ("==PID==ERROR: ...", a UBSan "runtime error:", libFuzzer's "deadly
  # signal" or timeout) to 60 lines after it: the stack is there.
  start="$(grep -n -m 1 -E '==[0-9]+== ?ERROR|runtime error:|deadly signal|ALARM: working on the last Unit' "$log" |
    cut -d: -f1)"
  if [ -n "$start" ]; then
    echo "---- the report, from $log:$start"
    tail -n +"$start" "$log" | head -n 60
  fi
fi
for f in "$@"; do
  [ -f "$f" ] || continue
  size="$(stat -c %s "$f")"
  if [ "$size" -le 65536 ]; then
    echo "---- reproducer $(basename "$f") ($size bytes), as base64 (base64 -d > crash):"
    base64 -w 120 "$f"
  else
    echo "---- reproducer $(basename "$f") ($size bytes): too large to print"
  fi
done
echo "---- free disk where the fuzzer ran: $(df -h "$(dirname "$log")" 2>/dev/null | awk 'NR == 2 {print $4}')"

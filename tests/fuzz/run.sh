#!/usr/bin/env bash
# Builds the front-end fuzzer with clang + libFuzzer + ASan/UBSan in build-fuzz/ and runs it.
#
#   tests/fuzz/run.sh [SECONDS]     (default 60)
#
# The corpus starts from every .pipe file of examples/, stdlib/ and tests/ (tests/lang/ first of all)
# and grows in build-fuzz/corpus/front; crashes, leaks and timeouts are written to build-fuzz/artifacts/front/.
# Exit status: 0 when the run ends cleanly, 1 on a crash, leak, timeout or out-of-memory, 2 when the
# fuzzer cannot be built. libFuzzer stops at the first finding; with PIPEC_FUZZ_KEEP_GOING=1 it runs in
# fork mode and goes on for the whole time, collecting every distinct finding in artifacts/front/. Needs the Debian packages clang-14 and libclang-rt-14-dev (scripts/setup.sh).
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-fuzz"
jobs="${PIPEC_JOBS:-2}"

CC="${CC:-clang-14}"
CXX="${CXX:-clang++-14}"
if ! command -v "$CXX" >/dev/null; then
  echo "fuzz: $CXX not found; install clang-14 and libclang-rt-14-dev (scripts/setup.sh)" >&2
  exit 2
fi

# -O1 (libFuzzer's documentation builds with -O1) and line tables only: a fifth less compile time than -O2 -g,
# and the same flags in both fuzz scripts, which share build-fuzz/ (other flags would rebuild it all).
fuzz_opt="-O1 -gline-tables-only -DNDEBUG"
mkdir -p "$build"
echo "fuzz: building $build/fuzz_front"
if ! CC="$CC" CXX="$CXX" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$fuzz_opt" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$fuzz_opt" \
      -DPIPEC_FUZZ=ON -DPIPEC_BUILD_TESTS=OFF >"$build/configure.log" 2>&1; then
  cat "$build/configure.log" >&2
  exit 2
fi
if ! cmake --build "$build" --target fuzz_front -j "$jobs"; then
  echo "fuzz: the fuzzer did not build" >&2
  exit 2
fi

# Seed corpus: the golden tests, the examples and the stdlib. libFuzzer keeps what adds coverage.
corpus="$build/corpus/front"
seeds="$build/seeds/front"
artifacts="$build/artifacts/front/"  # beside artifacts/images/ (run_images.sh), not above it
mkdir -p "$corpus" "$seeds" "$artifacts"
rm -f "$seeds"/*
i=0
while IFS= read -r -d '' f; do
  cp "$f" "$seeds/$(printf '%04d' "$i")_$(basename "$f")"
  i=$((i + 1))
done < <(find "$root/tests/lang" "$root/tests/fmt" "$root/examples" "$root/stdlib" -name '*.pipe' -print0 | sort -z)
echo "fuzz: $i seed files; running for ${seconds}s"

# Run from an empty folder: imports by module name resolve there (nothing) and in the stdlib.
workdir="$build/workdir"
mkdir -p "$workdir"
log="$build/fuzz_front.log"
# AddressSanitizer makes stack frames several times larger, so the 4000-deep expressions the front end
# accepts (sema recurses once or twice per level) overflow the usual 8 MB stack only under ASan. The
# fuzzer gets 64 MB, as much room relative to its frames as a release build has with 8 MB.
ulimit -s 65536 2>/dev/null || ulimit -s "$(ulimit -H -s)" 2>/dev/null || true
# One input may take this long before it counts as a hang (a timeout-* reproducer; libFuzzer's
# slow-unit-* report starts at the same bound, so nothing slower passes quietly). The slowest inputs
# the fuzzer makes, 4000-deep operator chains with errors, take about 2 s under ASan on 2 cores; at a
# 10 s bound, one failed a run on a machine busy with other work (13 s): noise, not a hang.
unit_seconds=25
mode=()
[ "${PIPEC_FUZZ_KEEP_GOING:-0}" = 1 ] && mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
marker="$build/.fuzz_started"
touch "$marker"
set +e
(cd "$workdir" && ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  "$build/fuzz_front" "$corpus" "$seeds" -max_total_time="$seconds" -max_len=65536 \
    -timeout="$unit_seconds" -report_slow_units="$unit_seconds" \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" "${mode[@]}" 2>&1) | tee "$log" | grep -E "^#|ERROR|SUMMARY|Done|stat::" | tail -n 40
status=${PIPESTATUS[0]}
set -e

runs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -n 1 || true)"
# Fork mode prints no final stats; its last status line counts the executions.
[ -n "$runs" ] || runs="$(grep -E '^#[0-9]+:' "$log" | tail -n 1 | sed -E 's/^#([0-9]+):.*/\1/' || true)"
echo "fuzz: ${runs:-?} executions; log in $log"
found="$(find "$artifacts" -type f -newer "$marker" | sort)"
if [ "$status" -ne 0 ] || [ -n "$found" ] || grep -qE "^==[0-9]+==ERROR|^SUMMARY: |runtime error:|ALARM: working on the last Unit" "$log"; then
  echo "fuzz: FAILED (exit $status); new reproducer(s):" >&2
  echo "${found:-none written}" >&2
  echo "reproduce one: (cd $workdir && ulimit -s 65536 && $build/fuzz_front FILE)" >&2
  # shellcheck disable=SC2086 # one reproducer per word
  bash "$root/tests/fuzz/report_failure.sh" "$log" "$build/fuzz_front" "$workdir" $found >&2
  exit 1
fi
echo "fuzz: no crash, leak or timeout"

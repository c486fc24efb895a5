#!/usr/bin/env bash
# Builds the image-decoder fuzzer (clang + libFuzzer + ASan/UBSan, in build-fuzz/) and runs it, seeded
# with the PNG and JPEG files of shared/testdata/external.
#
#   tests/fuzz/run_images.sh [SECONDS]     (default 60)
#
# Exit status: 0 when the run ends cleanly, 1 on a crash, leak or timeout, 2 when it cannot be built.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-fuzz"
jobs="${PIPEC_JOBS:-2}"
CC="${CC:-clang-14}"
CXX="${CXX:-clang++-14}"
command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (scripts/setup.sh)" >&2; exit 2; }
# -O1 (libFuzzer's documentation builds with -O1) and line tables only: a fifth less compile time than -O2 -g,
# and the same flags in both fuzz scripts, which share build-fuzz/ (other flags would rebuild it all).
fuzz_opt="-O1 -gline-tables-only -DNDEBUG"
mkdir -p "$build"
CC="$CC" CXX="$CXX" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$fuzz_opt" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$fuzz_opt" \
  -DPIPEC_FUZZ=ON -DPIPEC_BUILD_TESTS=OFF >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 2; }
cmake --build "$build" --target fuzz_images -j "$jobs" || { echo "fuzz: fuzz_images did not build" >&2; exit 2; }

shared="${PIPEC_SHARED_DIR:-$root/../shared}"
corpus="$build/corpus/images"
seeds="$build/seeds/images"
artifacts="$build/artifacts/images/"
mkdir -p "$corpus" "$seeds" "$artifacts"
rm -f "$seeds"/*
cp "$shared"/testdata/external/png/*.png "$shared"/testdata/external/jpeg/*.jp*g "$root"/tests/fuzz/image_regressions/* "$seeds"/ 2>/dev/null || true
echo "fuzz: $(ls "$seeds" | wc -l) seed files; running for ${seconds}s"
log="$build/fuzz_images.log"
marker="$build/.fuzz_images_started"
touch "$marker"
unit_seconds=25  # when one input counts as a hang: tests/fuzz/run.sh says why
set +e
ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  "$build/fuzz_images" "$corpus" "$seeds" -max_total_time="$seconds" -max_len=200000 -timeout="$unit_seconds" -report_slow_units="$unit_seconds" \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" >"$log" 2>&1
status=$?
set -e
grep -E "^stat::number_of_executed_units|SUMMARY|ERROR" "$log" | tail -n 5
found="$(find "$artifacts" -type f -newer "$marker" | sort)"
if [ "$status" -ne 0 ] || [ -n "$found" ]; then
  echo "fuzz: FAILED (exit $status); reproducers: ${found:-none}; log $log" >&2
  # shellcheck disable=SC2086 # one reproducer per word
  bash "$root/tests/fuzz/report_failure.sh" "$log" "$build/fuzz_images" "$build" $found >&2
  exit 1
fi
echo "fuzz: no crash, leak or timeout"

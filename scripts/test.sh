#!/usr/bin/env bash
# The README's second command: install, build, and run every test (unit, golden language tests,
# conformance), then fuzz the front end for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)")
if [ -x tests/fuzz/run.sh ]; then
  bash tests/fuzz/run.sh "${PIPEC_FUZZ_SECONDS:-60}"
fi

#!/usr/bin/env bash
# Builds pipec with sanitizers, in a build directory of its own, and runs the tests there.
#
#   scripts/sanitize.sh asan [CTEST_ARGS...]   # AddressSanitizer + UBSan in build-asan/: every ctest test
#   scripts/sanitize.sh tsan [CTEST_ARGS...]   # ThreadSanitizer in build-tsan/: the runtime's tests and the
#                                              # unit tests that run pipelines on threads
#
# A finding fails its test: UBSan is built with -fno-sanitize-recover, ASan stops at the first error
# (and reports leaks at exit), TSan makes the process exit with status 66 after a race report. Extra
# arguments go to ctest (e.g. `-R RunTest` to run a few tests again). Sanitizer builds are -O1 -g1:
# about half the compile time of -O2 -g, and still fast enough to run every test.
#
# Suppressions (tests/sanitizers/) are for third-party code only, never for pipec's own.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mode="${1:-}"
shift || true
jobs="${PIPEC_JOBS:-$(nproc 2>/dev/null || echo 2)}"

common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
        # GCC's flow-based warnings (-Wmaybe-uninitialized, -Wstringop-*) change with -O1 and the sanitizers'
        # instrumentation and give false positives there; the normal build is the one that keeps warnings out.
        -DPIPEC_WERROR=OFF)
case "$mode" in
  asan)
    dir=build-asan
    flags=(-DPIPEC_SANITIZE=ON -DPIPEC_SANITIZE_THREAD=OFF)
    targets=(all)
    tests=()
    ;;
  tsan)
    dir=build-tsan
    flags=(-DPIPEC_SANITIZE=OFF -DPIPEC_SANITIZE_THREAD=ON)
    # unit_tests runs `pipec` as a subprocess in its command-line tests, so pipec is built too.
    targets=(runtime_tests unit_tests pipec)
    # Everything in runtime_tests (thread pool, queues, cancellation, buffer pool, read-ahead,
    # checkpoints, I/O); in unit_tests the tests that run whole pipelines (prefetch, parallel maps,
    # interleave, shuffle, checkpoints and resume, the C ABI's handles, the stage-by-field matrix).
    # Not here: train_kernel_tests (oneDNN runs on OpenMP, and Debian's libgomp is not built with TSan,
    # so every parallel region would be reported), the golden, conformance and difftest runs (the
    # same code paths as the unit tests, at ten times the cost under TSan).
    tests=(-R '^(runtime_tests|unit_tests)$|^[A-Za-z0-9_]+(Run|Runtime|Pipeline|Prefetch|Checkpoint|Capi|Cancel|Thread|Pool|Queue|Interleave|Shuffle|Stage|Image|Cli)[A-Za-z0-9_]*\.')
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [CTEST_ARGS...]" >&2
    exit 2
    ;;
esac

mkdir -p "$dir"
cmake -S . -B "$dir" "${common[@]}" "${flags[@]}" >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 2; }
cmake --build "$dir" -j "$jobs" --target "${targets[@]}"

supp="$root/tests/sanitizers"
# ASan: leaks count; a C++ exception thrown through a JIT-compiled kernel is ordinary control flow.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:abort_on_error=0:halt_on_error=1:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:second_deadlock_stack=1:halt_on_error=0:exitcode=66:${TSAN_OPTIONS:-}"
cd "$dir"
ctest --output-on-failure -j "$jobs" "${tests[@]}" "$@"

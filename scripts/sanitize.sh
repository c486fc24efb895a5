#!/usr/bin/env bash
# Builds pipec with sanitizers, in a build directory of its own, and runs the tests there.
#
#   scripts/sanitize.sh asan [CTEST_ARGS...]   # AddressSanitizer + UBSan in build-asan/: every ctest test
#   scripts/sanitize.sh tsan [CTEST_ARGS...]   # ThreadSanitizer in build-tsan/: every runtime test and the
#                                              # unit tests that run pipelines on threads
#
# A finding fails its test: UBSan is built with -fno-sanitize-recover, ASan stops at the first error
# (and reports leaks at exit), TSan makes the process exit with status 66 after a race report. Extra
# arguments go to ctest (e.g. `-R Checkpoint` to run a few tests again). Sanitizer builds have line
# tables only (-g1); their optimization level is chosen per sanitizer in main below.
#
# Suppressions (tests/sanitizers/) are for third-party code only, never for pipec's own.
set -euo pipefail

# The TSan job's unit tests: all of them (ctest label `unit`) but these suites, which compile, print
# or check on the calling thread only (the checker, the formatter, the language server, the code
# generators' op-by-op comparisons with the interpreter, the reference executor's and the GPU kernels'
# host build's numerics). A new suite is under TSan unless listed here; a file all of whose suites are
# listed is also named in tests/CMakeLists.txt, which leaves it out of the TSan build.
tsan_single_thread='^(Sema|TrainTrajectory|GpuStep[A-Za-z]*|Fmt[A-Za-z]*|Lsp[A-Za-z]*|Json|Promotion|ConstEval|Diagnostics|DiagnosticCoverage|SyntaxFiles|Cuda[A-Za-z]*|OpTable|PlanSerialize|Compile|FitShape|Broadcast|CodegenOps|Reductions|AllDtypes/[A-Za-z]*)\.'
# And these, which run oneDNN's OpenMP threads in the test process itself (Debian's libgomp is not built
# with TSan, so every parallel region is reported: the reason train_kernel_tests is left out; a served
# model's library runs oneDNN in the program that calls it), or measure
# resident memory (TSan's shadow memory multiplies it).
tsan_openmp_or_rss='^(TrainExamples\.|FastExecutor\.|Serve[A-Za-z]*\.|StepArena\.|MixedPrecision\.ChessNetWithinBoundsOfFp32$|MixedPrecision\.Bf16KernelsAgreeWithTheEmulation$|TrainRun\.ChessExampleTrains$|AutotuneCommandLine\.ResidentMemoryFollowsTheBudget$|CheckpointBounds\.PipecRunSavingEveryElementKeepsItsMemory$)'
tsan_unit_exclude="$tsan_single_thread|$tsan_openmp_or_rss"

main() {
  cd "$(dirname "$0")/.."
  local root mode jobs dir
  root=$(pwd)
  mode="${1:-}"
  shift || true
  jobs="${PIPEC_JOBS:-$(nproc 2>/dev/null || echo 2)}"

  # ASan + UBSan at -Og: GCC's -O1 inlines the instrumented code and then compiles for twice as long as
  # the normal -O2 build; -Og (no inlining but of functions called once) takes about the normal build's
  # time. TSan at -O1 compiles faster than -O2 and runs its threads at a speed the tests need.
  local opt=-O1
  [ "$mode" = asan ] && opt=-Og
  local common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=${opt} -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=${opt} -g1 -DNDEBUG"
    # GCC's flow-based warnings (-Wmaybe-uninitialized, -Wstringop-*) change with -O1 and the sanitizers'
    # instrumentation and give false positives there; the normal build is the one that keeps warnings out.
    -DPIPEC_WERROR=OFF
    # The benchmark programs: no test runs them, and under ASan they are 240 MB and a minute of linking.
    -DPIPEC_BUILD_BENCH=OFF)
  local flags targets
  case "$mode" in
    asan)
      dir=build-asan
      # The difftest with 15 random pipelines instead of 200 (tests/difftest/CMakeLists.txt), the
      # training difftest with 10 random cases instead of 100 (tests/train_difftest/CMakeLists.txt).
      flags=(-DPIPEC_SANITIZE=ON -DPIPEC_SANITIZE_THREAD=OFF -DPIPEC_DIFFTEST_SEEDS=15 -DPIPEC_TRAIN_DIFFTEST_CASES=10)
      targets=(all)
      ;;
    tsan)
      dir=build-tsan
      flags=(-DPIPEC_SANITIZE=OFF -DPIPEC_SANITIZE_THREAD=ON)
      # unit_tests runs `pipec` as a subprocess in its command-line tests, so pipec is built too.
      # Not here: train_kernel_tests (oneDNN runs on OpenMP, and Debian's libgomp is not built with TSan,
      # so every parallel region would be reported), the golden, conformance and difftest runs (the
      # same code paths as the unit tests, at ten times the cost under TSan).
      targets=(runtime_tests unit_tests pipec)
      ;;
    *)
      echo "usage: scripts/sanitize.sh asan|tsan [CTEST_ARGS...]" >&2
      exit 2
      ;;
  esac

  mkdir -p "$dir"
  cmake -S . -B "$dir" "${common[@]}" "${flags[@]}" >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 2; }
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"

  local supp="$root/tests/sanitizers"
  export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:halt_on_error=1:${ASAN_OPTIONS:-}"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
  export TSAN_OPTIONS="suppressions=$supp/tsan.supp:second_deadlock_stack=1:halt_on_error=0:exitcode=66:${TSAN_OPTIONS:-}"
  # AddressSanitizer's stack frames are several times larger, so the 4000-deep expressions the front end
  # accepts (Sema.DeepNesting, Sema.LongOperatorChainIsHandled) overflow the usual 8 MB stack only under
  # it: 64 MB gives as much room relative to the frames as 8 MB has without it (tests/fuzz/run.sh does
  # the same). glibc sizes new threads' stacks by this limit too.
  ulimit -s 65536 2>/dev/null || ulimit -s "$(ulimit -H -s)" 2>/dev/null || true
  cd "$dir"
  if [ "$mode" = asan ]; then
    # Not here: gpu_training_emulated runs whole training steps through the GPU kernels' host build
    # (plain loops, minutes even without ASan); the same kernels and the executor around them run under
    # ASan in the unit tests at small sizes (GpuStepKernels.*, GpuExecutorLibraries.*). And the tests
    # that hand every generated kernel to NVRTC (*.NvrtcCompiles*: two and a half minutes, all of it
    # inside NVRTC, which is not instrumented); the code that writes those kernels runs under ASan in
    # the CudaCodegenHost, CudaOpsHost and GpuStepKernels tests, and NVRTC's error path in Nvrtc.*.
    # And the test that bounds pipec's peak memory while it saves a checkpoint per element: ASan keeps
    # up to 256 MB of freed memory in its quarantine, so each save's buffers stay resident (471 MB
    # against a 250 MB bound once, in a run where it had passed before).
    # And the `mpi` label: the runs under mpirun (tests/dist, docs/design.md's data-parallel section).
    # MPI's own libraries are not instrumented and its launcher forks a process per rank; the
    # communicator's logic runs here anyway, over a fake MPI (runtime_tests' MpiCommunicator.*).
    # And the `memory` label: the memory plan held against pipec's resident peak (tests/memory), which
    # under ASan is mostly its shadow memory and quarantine; the plan's parts are unit tests here.
    # And the tests that run NVRTC (Nvrtc.*, PtxCache.*) run on their own afterwards, with LeakSanitizer
    # not scanning thread-local storage (use_tls=0): NVRTC, loaded with dlopen, uses dynamic TLS, and
    # this toolchain's LeakSanitizer (GCC 12's, with glibc 2.36) can read a bogus block from it and
    # crash in its tracer ("Tracer caught signal 11"), depending only on where the test binary's code
    # lands (an unrelated test added to runtime_tests once made PtxCache.SecondCompile... crash every
    # time under ctest). Their heap is still checked for leaks from the stacks and globals.
    local status=0
    ctest --output-on-failure -j "$jobs" -LE '^(mpi|memory)$' \
      -E '^gpu_training_emulated$|NvrtcCompiles|^CheckpointBounds\.PipecRunSavingEveryElementKeepsItsMemory$|^(Nvrtc|PtxCache)\.' \
      "$@" || status=1
    LSAN_OPTIONS="$LSAN_OPTIONS:use_tls=0" ctest --output-on-failure -j "$jobs" -R '^(Nvrtc|PtxCache)\.' -E 'NvrtcCompiles' \
      "$@" || status=1
    return $status
  else
    local status=0
    ctest --output-on-failure -j "$jobs" -L '^runtime$' "$@" || status=1
    ctest --output-on-failure -j "$jobs" -L '^unit$' -E "$tsan_unit_exclude" "$@" || status=1
    return $status
  fi
}

# The whole script is read before it runs (main is called on the last line), so editing it while a
# run is under way does not change that run.
main "$@"

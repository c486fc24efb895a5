#!/usr/bin/env bash
# The GPU checks, on any Linux machine with an NVIDIA GPU and its driver (libcuda.so.1):
#   1. GPU-vs-interpreter differential tests (build/tests/gpu_tests),
#   2. bench/gpu: pinned H2D, D2D and the generated chess kernel's bandwidth (build/bench/gpu_bench),
#   3. end to end: bench/gpu/chess_gpu.pipe with --device gpu against --device cpu,
# then one summary table with the issue's targets.
#
# Binaries: $PIPEC_BIN_DIR (a folder holding pipec, gpu_tests and gpu_bench, e.g. from
# scripts/bundle.sh), else build/ when it already has them (carried from the build machine), else a
# fresh CMake build in build-gpu/ (needs the build dependencies of scripts/setup.sh).
# NVRTC: the CUDA toolkit's libnvrtc, found through $CUDA_HOME, /usr/local/cuda or the loader path
# (the bundle ships it beside pipec when it was built on a machine with the toolkit).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
take=${PIPEC_GPU_TAKE:-2000}

bin=""
if [ -n "${PIPEC_BIN_DIR:-}" ]; then
  bin=$PIPEC_BIN_DIR
elif [ -x build/pipec ] && [ -x build/tests/gpu_tests ] && [ -x build/bench/gpu_bench ]; then
  bin=build
else
  echo "== building pipec, gpu_tests and gpu_bench in build-gpu/"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  cmake --build build-gpu --target pipec gpu_tests gpu_bench -j"$(nproc)" || exit 1
  bin=build-gpu
fi
pipec=$bin/pipec
gpu_tests=$bin/gpu_tests; [ -x "$gpu_tests" ] || gpu_tests=$bin/tests/gpu_tests
gpu_bench=$bin/gpu_bench; [ -x "$gpu_bench" ] || gpu_bench=$bin/bench/gpu_bench
[ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$root/$bin/lib:${LD_LIBRARY_PATH:-}"
export PIPEC_STDLIB=${PIPEC_STDLIB:-$root/stdlib}
export PIPEC_CACHE_DIR=${PIPEC_CACHE_DIR:-$root/build-gpu-cache}
out=$(mktemp -d)

echo "== differential tests"
"$gpu_tests" 2>&1 | tee "$out/tests.txt"
tests_passed=$(grep -c '^\[       OK \]' "$out/tests.txt")
tests_failed=$(grep '^\[  FAILED  \] [A-Za-z]*\.' "$out/tests.txt" | awk '{ print $4 }' | sort -u | wc -l)

echo "== bench/gpu"
"$gpu_bench" --spec examples/chess/chess.pipe 2>&1 | tee "$out/bench.txt"
val() { awk -v k="$1" '$1 == k { print $2 }' "$out/bench.txt"; }

echo "== end to end (chess, $take batches of 512)"
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  "$pipec" run examples/chess/make_data.pipe -q || echo "could not make the chess data"
fi
"$pipec" run bench/gpu/chess_gpu.pipe --take "$take" --device gpu --stats-json "$out/gpu.json" 2>&1 | tail -15
"$pipec" run bench/gpu/chess_gpu.pipe --take "$take" --device cpu --stats-json "$out/cpu.json" 2>&1 | tail -3
eps() { sed -n 's/.*"examples_per_second": \([0-9.]*\).*/\1/p' "$1" 2>/dev/null; }
gpu_eps=$(eps "$out/gpu.json"); cpu_eps=$(eps "$out/cpu.json")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { if (r == "-") print "n/a"; else if (r >= t) print "ok"; else print "BELOW" }'; }
h2d=$(val h2d_pinned_gbs); exe=$(val executor_gbs); d2d=$(val d2d_gbs); ker=$(val kernel_gbs)
r1=$(ratio "$exe" "$h2d"); r2=$(ratio "$ker" "$d2d"); r3=$(ratio "$gpu_eps" "$cpu_eps")

echo
echo "== summary ($(awk '$1 == "device" { $1 = ""; print }' "$out/bench.txt"))"
printf '%-34s %14s %14s %8s %8s %6s\n' "check" "measured" "reference" "ratio" "target" ""
printf '%-34s %14s %14s %8s %8s %6s\n' "differential tests" "$tests_passed passed" "$tests_failed failed" "-" "0 fail" \
  "$([ "$tests_failed" = 0 ] && [ "$tests_passed" -gt 0 ] && echo ok || echo FAIL)"
printf '%-34s %14s %14s %8s %8s %6s\n' "H2D via executor / pinned memcpy" "${exe:--} GB/s" "${h2d:--} GB/s" "$r1" ">=0.80" "$(verdict "$r1" 0.8)"
printf '%-34s %14s %14s %8s %8s %6s\n' "fused kernel / D2D copy" "${ker:--} GB/s" "${d2d:--} GB/s" "$r2" ">=0.60" "$(verdict "$r2" 0.6)"
printf '%-34s %14s %14s %8s %8s %6s\n' "end to end gpu / cpu (examples/s)" "${gpu_eps:--}" "${cpu_eps:--}" "$r3" ">=3.00" "$(verdict "$r3" 3)"
rm -rf "$out"
[ "$tests_failed" = 0 ] && [ "$tests_passed" -gt 0 ]

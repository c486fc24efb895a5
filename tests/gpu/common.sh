# What tests/gpu/run.sh and bench/train/gpu/run.sh share: finding the binaries (the bundle, build/, or a
# fresh build) and NVIDIA's pip wheels. Sourced from the repository's root; sets $bin, $pipec, $gpu_tests,
# $gpu_bench, $step_time (may be absent), LD_LIBRARY_PATH and PIPEC_STDLIB.

find_binaries() {
  if [ -z "${PIPEC_BIN_DIR:-}" ] && [ ! -x dist/pipec-bundle/pipec ] && [ -f dist/pipec-bundle.tar.xz ]; then
    # The bundle travels compressed (scripts/bundle.sh: 203 MiB unpacked, 51 MiB as the archive).
    echo "== unpacking dist/pipec-bundle.tar.xz"
    tar -xJf dist/pipec-bundle.tar.xz -C dist 2>/dev/null ||
      "${PIPEC_PYTHON:-python3}" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        dist/pipec-bundle.tar.xz dist || { echo "run.sh: cannot unpack dist/pipec-bundle.tar.xz"; return 1; }
  fi
  if [ -n "${PIPEC_BIN_DIR:-}" ]; then
    bin=$PIPEC_BIN_DIR
  elif [ -x dist/pipec-bundle/pipec ]; then
    bin=dist/pipec-bundle
  elif [ -x build/pipec ] && [ -x build/tests/gpu_tests ] && [ -x build/bench/gpu_bench ]; then
    bin=build
  elif command -v cmake >/dev/null && command -v ninja >/dev/null; then
    echo "== building pipec, gpu_tests and gpu_bench in build-gpu/"
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || return 1
    cmake --build build-gpu --target pipec gpu_tests gpu_bench train_step_time -j"$(nproc)" || return 1
    bin=build-gpu
  else
    echo "run.sh: no binaries: set PIPEC_BIN_DIR, copy dist/pipec-bundle.tar.xz here (scripts/bundle.sh), or install cmake and ninja"
    return 1
  fi
  [ -d "$bin" ] || { echo "run.sh: $bin is not a folder"; return 1; }
  bin=$(cd "$bin" && pwd)
  pipec=$bin/pipec
  gpu_tests=$bin/gpu_tests; [ -x "$gpu_tests" ] || gpu_tests=$bin/tests/gpu_tests
  gpu_bench=$bin/gpu_bench; [ -x "$gpu_bench" ] || gpu_bench=$bin/bench/gpu_bench
  # Optional (bench/train/gpu/run.sh's breakdown): the step alone, node by node.
  step_time=$bin/train_step_time; [ -x "$step_time" ] || step_time=$bin/bench/train_step_time
  for b in "$pipec" "$gpu_tests" "$gpu_bench"; do
    [ -f "$b" ] && [ ! -x "$b" ] && chmod +x "$b"  # a copy that lost its modes on the way
    [ -x "$b" ] || { echo "run.sh: $b is missing"; return 1; }
  done
  if ! "$pipec" --version >/dev/null; then
    echo "run.sh: $pipec does not start here (above: the loader's reason; the bundle needs glibc >= 2.36)"
    return 1
  fi
  [ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ -z "${PIPEC_STDLIB:-}" ]; then
    if [ -d "$bin/stdlib" ]; then export PIPEC_STDLIB=$bin/stdlib; else export PIPEC_STDLIB=$root/stdlib; fi
  fi
  return 0
}

# NVIDIA's pip wheels (PyTorch brings NVRTC, cuBLAS, cuDNN, NCCL): every nvidia/*/lib folder of the
# Python on the PATH, for the loaders to search first.
wheel_library_dirs() {
  "${PIPEC_PYTHON:-python3}" - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception:
    roots = []
print(":".join(d for r in roots for d in sorted(glob.glob(os.path.join(r, "*", "lib"))) if os.path.isdir(d)))
EOF
}


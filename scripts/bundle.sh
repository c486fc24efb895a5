#!/usr/bin/env bash
# Makes dist/pipec-bundle/: pipec, gpu_tests, gpu_bench, train_step_time and the hand-written chess loop
# that run on a Linux x86-64 machine with glibc >= this one's (Debian 12: 2.36) and none of our Debian
# packages, e.g. a GPU machine with only a driver and Python. LLVM 14, antlr4-runtime, zlib, libpng and libjpeg are linked
# from their static archives, libstdc++ and libgcc statically; libfmt.so (Debian has no static one) is
# shipped in lib/ beside the binaries and found through an $ORIGIN rpath; stdlib/ is copied in. libcuda
# and NVRTC are opened with dlopen at run time: the driver's libcuda from the loader path, NVRTC from the
# loader path, the CUDA toolkit or NVIDIA's pip wheels (PyTorch brings nvidia-cuda-nvrtc), so they are
# not shipped.
# Then it packs the folder into dist/pipec-bundle.tar.xz, the one file to copy beside the repository to
# the GPU machine, where tests/gpu/run.sh unpacks it.
#
#   nice -n 19 bash scripts/bundle.sh [--with-nvrtc] [--max-size MB]
#       # builds in build-bundle/ (CPU-heavy once; then incremental, and ccache serves the objects)
#
# --with-nvrtc ships the toolkit's NVRTC too (over 100 MiB), for a GPU machine that has neither the
# toolkit nor NVIDIA's wheels. --max-size MB fails (or, with --with-nvrtc, warns) when the archive and
# the repository's tracked files together pass MB MiB: for a copy that must stay under some size.
# Then run the GPU checks with it: tests/gpu/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: bash scripts/bundle.sh [--with-nvrtc] [--max-size MB]   (the options: the comment at the top of scripts/bundle.sh)" >&2
}
with_nvrtc=0
max_mib=""
while [ $# -gt 0 ]; do
  case "$1" in
    --with-nvrtc) with_nvrtc=1 ;;
    --max-size)
      [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "bundle.sh: --max-size needs a size in MiB (a whole number)" >&2; exit 2; }
      max_mib=$2
      shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bundle.sh: unknown argument \`$1\`" >&2; usage; exit 2 ;;
  esac
  shift
done
jobs=${PIPEC_BUNDLE_JOBS:-2}
out=dist/pipec-bundle

if [ ! -f build-bundle/build.ninja ]; then
  # The same build type as scripts/build.sh, so the compiler cache built there serves this build too;
  # the copies are stripped below.
  cmake -S . -B build-bundle -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPEC_BUNDLE=ON >/dev/null
fi
cmake --build build-bundle --target pipec gpu_tests gpu_bench train_step_time -j"$jobs"

rm -rf "$out"
mkdir -p "$out/lib"
cp build-bundle/pipec build-bundle/tests/gpu_tests build-bundle/bench/gpu_bench build-bundle/bench/train_step_time "$out/"
strip "$out/pipec" "$out/gpu_tests" "$out/gpu_bench" "$out/train_step_time"
cp -r stdlib "$out/stdlib"
# The hand-written chess loop (bench/chess/handwritten.cpp), the input path's reference, so that
# bench/chess/curve.sh runs it beside pipec on the GPU machine's cores: built for x86-64-v3 (AVX2) and v4
# (AVX-512), the curve takes the one the CPU runs; libstdc++, libgcc and zlib linked in, libfmt from lib/.
for level in v3 v4; do
  g++ -std=c++20 -O3 -march=x86-64-$level -DNDEBUG -I. bench/chess/handwritten.cpp build-bundle/runtime/libpipec_runtime.a \
    -lfmt -l:libz.a -lpthread -ldl -static-libstdc++ -static-libgcc -Wl,-rpath,'$ORIGIN/lib' -o "$out/chess_handwritten_$level"
done
strip "$out"/chess_handwritten_*
# Shared libraries the binaries still need beyond the C/C++ library level are shipped beside them
# (libstdc++ is allowed: libfmt.so, shipped, needs the system one).
allowed='linux-vdso|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|ld-linux|libgcc_s\.so|libstdc\+\+\.so'
for bin in "$out/pipec" "$out/gpu_tests" "$out/gpu_bench" "$out/train_step_time" "$out"/chess_handwritten_*; do
  ldd "$bin" | awk '$3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    if ! echo "$name" | grep -Eq "$allowed" && [ ! -e "$out/lib/$name" ]; then cp -L "$path" "$out/lib/$name"; fi
  done
done
strip --strip-unneeded "$out"/lib/*.so* 2>/dev/null || true
if [ "$with_nvrtc" = 1 ]; then
  found=""
  for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/lib; do
    if ls "$dir"/libnvrtc.so.[0-9]* >/dev/null 2>&1; then found=$dir; break; fi
  done
  if [ -z "$found" ]; then
    echo "bundle.sh: --with-nvrtc: no libnvrtc.so.N in \$CUDA_HOME/lib64 or /usr/local/cuda"; exit 1
  fi
  # The versioned files only (libnvrtc.so.13, libnvrtc-builtins.so.13.0), which is what the loader
  # and NVRTC itself open.
  for f in "$found"/libnvrtc.so.[0-9]* "$found"/libnvrtc-builtins.so.[0-9]*; do
    case "$f" in *.alt.*) continue ;; esac
    cp -L "$f" "$out/lib/"
  done
fi

# The check: nothing but C-library-level dependencies, or ones shipped in lib/. The shipped libraries'
# own dependencies (libdnnl needs libgomp and libOpenCL) have no $ORIGIN rpath and are found through
# LD_LIBRARY_PATH, which tests/gpu/run.sh sets to lib/.
status=0
for bin in "$out/pipec" "$out/gpu_tests" "$out/gpu_bench" "$out/train_step_time" "$out"/chess_handwritten_*; do
  while read -r name path; do
    if echo "$name" | grep -Eq "$allowed"; then continue; fi
    case "$path" in
      "$(cd "$out/lib" && pwd)"/*) ;;
      *) echo "bundle.sh: $bin depends on $name ($path), which is neither C-library level nor shipped"; status=1 ;;
    esac
  done < <(LD_LIBRARY_PATH="$(cd "$out/lib" && pwd)" ldd "$bin" | awk '$2 == "=>" { print $1, $3 }')
  if LD_LIBRARY_PATH="$(cd "$out/lib" && pwd)" ldd "$bin" | grep -q 'not found'; then
    echo "bundle.sh: $bin has unresolved libraries:"; LD_LIBRARY_PATH="$(cd "$out/lib" && pwd)" ldd "$bin" | grep 'not found'; status=1
  fi
done
if ldd "$out/pipec" | grep -q 'libLLVM'; then
  echo "bundle.sh: pipec links libLLVM dynamically; the LLVM build must honour PIPEC_LLVM_STATIC"; status=1
fi
"$out/pipec" --version >/dev/null || { echo "bundle.sh: the bundled pipec does not start"; status=1; }
"$out/gpu_tests" --gtest_list_tests >/dev/null || { echo "bundle.sh: the bundled gpu_tests does not start"; status=1; }

# Unpacked the bundle is large (four binaries with LLVM linked in, and oneDNN for training: 203 MiB),
# so it travels as dist/pipec-bundle.tar.xz (51 MiB), which tests/gpu/run.sh unpacks.
tar -C dist -cf - pipec-bundle | xz -T0 -6 >"$out.tar.xz.part" && mv "$out.tar.xz.part" "$out.tar.xz"
bundle_bytes=$(stat -c %s "$out.tar.xz")
repo_bytes=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
echo "bundle: $out, $(($(du -sb "$out" | cut -f1) / 1024)) KiB unpacked, $out.tar.xz $((bundle_bytes / 1024)) KiB ($(cd "$out" && du -b pipec gpu_tests gpu_bench train_step_time lib/* | awk '{ printf "%s %d KiB; ", $2, $1 / 1024 }'))"
echo "to copy to the GPU machine: $out.tar.xz and the repository's tracked files, $(((bundle_bytes + repo_bytes) / 1024)) KiB${max_mib:+ (at most $((max_mib * 1024)) KiB: --max-size $max_mib)}"
if [ -n "$max_mib" ] && [ $((bundle_bytes + repo_bytes)) -gt $((max_mib * 1048576)) ]; then
  if [ "$with_nvrtc" = 1 ]; then
    echo "bundle.sh: warning: with NVRTC the bundle and the repository pass --max-size $max_mib MiB"
  else
    echo "bundle.sh: the bundle and the repository pass --max-size $max_mib MiB"; status=1
  fi
fi
exit $status

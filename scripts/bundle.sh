#!/usr/bin/env bash
# Makes dist/pipec-bundle/: a pipec (plus gpu_tests and gpu_bench) that runs on a Linux x86-64 machine
# with glibc >= this one's and an NVIDIA driver, without our Debian packages. antlr4-runtime, zlib,
# libpng, libjpeg and (when the build has it) LLVM 14 are linked from their static archives, libstdc++
# and libgcc statically; libfmt.so (Debian has no static one) is shipped in lib/ beside the binaries
# and found through an $ORIGIN rpath. libcuda and NVRTC are opened with dlopen at run time and are not
# shipped unless --with-nvrtc (NVRTC is large; CUDA machines usually have the toolkit).
#
#   bash scripts/bundle.sh [--with-nvrtc]    # builds in build-bundle/ (CPU-heavy: run it once)
# Then copy dist/pipec-bundle/ and the repository's examples/, bench/ and tests/gpu/ to the GPU
# machine and run `PIPEC_BIN_DIR=dist/pipec-bundle bash tests/gpu/run.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
with_nvrtc=0
[ "${1:-}" = "--with-nvrtc" ] && with_nvrtc=1
jobs=${PIPEC_BUNDLE_JOBS:-2}
out=dist/pipec-bundle

if [ ! -f build-bundle/build.ninja ]; then
  # The same build type as scripts/build.sh, so the compiler cache built there serves this build too;
  # the copies are stripped below.
  cmake -S . -B build-bundle -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPEC_BUNDLE=ON >/dev/null
fi
cmake --build build-bundle --target pipec gpu_tests gpu_bench -j"$jobs"

rm -rf "$out"
mkdir -p "$out/lib"
cp build-bundle/pipec build-bundle/tests/gpu_tests build-bundle/bench/gpu_bench "$out/"
strip "$out/pipec" "$out/gpu_tests" "$out/gpu_bench"
cp -r stdlib "$out/stdlib"
# Shared libraries the binaries still need beyond the C/C++ library level are shipped beside them
# (libstdc++ is allowed: libfmt.so, shipped, needs the system one).
allowed='linux-vdso|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|ld-linux|libgcc_s\.so|libstdc\+\+\.so'
for bin in "$out/pipec" "$out/gpu_tests" "$out/gpu_bench"; do
  ldd "$bin" | awk '$3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    if ! echo "$name" | grep -Eq "$allowed" && [ ! -e "$out/lib/$name" ]; then cp -L "$path" "$out/lib/$name"; fi
  done
done
if [ "$with_nvrtc" = 1 ]; then
  for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64; do
    if ls "$dir"/libnvrtc.so.* >/dev/null 2>&1; then
      cp -L "$dir"/libnvrtc.so.[0-9]* "$dir"/libnvrtc-builtins.so.[0-9]* "$out/lib/" 2>/dev/null || true
      break
    fi
  done
fi

# The check: nothing but C-library-level dependencies, or ones shipped in lib/.
status=0
for bin in "$out/pipec" "$out/gpu_tests" "$out/gpu_bench"; do
  while read -r name path; do
    if echo "$name" | grep -Eq "$allowed"; then continue; fi
    case "$path" in
      "$(cd "$out/lib" && pwd)"/*) ;;
      *) echo "bundle.sh: $bin depends on $name ($path), which is neither C-library level nor shipped"; status=1 ;;
    esac
  done < <(ldd "$bin" | awk '$2 == "=>" { print $1, $3 }')
  if ldd "$bin" | grep -q 'not found'; then
    echo "bundle.sh: $bin has unresolved libraries:"; ldd "$bin" | grep 'not found'; status=1
  fi
done
if ldd "$out/pipec" | grep -q 'libLLVM'; then
  echo "bundle.sh: pipec links libLLVM dynamically; the LLVM build must honour PIPEC_LLVM_STATIC"; status=1
fi
size=$(du -sb "$out/pipec" | cut -f1)
echo "bundle: $out ($(du -sh "$out" | cut -f1) in all; pipec $((size / 1048576)) MiB)"
ls -la "$out" "$out/lib"
if [ "$size" -gt $((64 * 1048576)) ]; then
  echo "bundle.sh: pipec is over 64 MiB"; status=1
fi
"$out/pipec" --version >/dev/null || { echo "bundle.sh: the bundled pipec does not start"; status=1; }
exit $status

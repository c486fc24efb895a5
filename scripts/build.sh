#!/usr/bin/env bash
# Configures and builds pipec in ./build (Release with debug info). Extra arguments go to `cmake --build`.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -f build/build.ninja ]; then
  # The Python module is built for the venv scripts/setup.sh made, and must then build (ON).
  venv=${PIPEC_VENV:-build/venv}
  python_flags=()
  if [ -x "$venv/bin/python" ]; then
    python_flags=(-DPIPEC_PYTHON=ON "-DPython_EXECUTABLE=$(cd "$venv/bin" && pwd)/python")
  fi
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${python_flags[@]}" >/dev/null
fi
cmake --build build -j"$jobs" "$@"

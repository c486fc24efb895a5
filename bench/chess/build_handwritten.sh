#!/usr/bin/env bash
# Builds build/bench/chess_handwritten (bench/chess/handwritten.cpp against build/runtime's library) when
# it is missing or older than its sources; bench/chess/run.sh and curve.sh call it. Needs build/ built.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build/bench
if [ ! -x build/bench/chess_handwritten ] || [ bench/chess/handwritten.cpp -nt build/bench/chess_handwritten ] ||
  [ build/runtime/libpipec_runtime.a -nt build/bench/chess_handwritten ]; then
  g++ -std=c++20 -O3 -march=native -DNDEBUG -I. bench/chess/handwritten.cpp build/runtime/libpipec_runtime.a \
    -lfmt -lz -lpthread -ldl -o build/bench/chess_handwritten
fi

#!/usr/bin/env bash
# The README's first command: install, build, and run the main example (seed 002's chess pipeline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target pipec
./build/pipec check examples/chess/chess.pipe
./build/pipec explain examples/chess/chess.pipe

#!/usr/bin/env bash
# The README's first command: install, build, make the chess sample data (seed 002's exact record
# format) and run the chess pipeline, showing its progress and where the time goes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target pipec
./build/pipec check examples/chess/chess.pipe
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data: 300,000 positions in examples/chess/data/"
  ./build/pipec run examples/chess/make_data.pipe
fi
# chess.pipe repeats forever (it feeds training); take 1,000 batches of 512.
./build/pipec run examples/chess/chess.pipe --take "${TAKE:-1000}"

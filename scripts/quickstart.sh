#!/usr/bin/env bash
# The README's first command: installs what it needs, builds pipec, makes the chess sample data (seed
# 002's exact record format), runs the chess pipeline briefly, then trains the chess net on it and checks
# it against the mean-prediction baseline on held-out positions (scripts/quickstart_train.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target pipec
./build/pipec check examples/chess/chess.pipe
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data: 300,000 positions in examples/chess/data/"
  ./build/pipec run examples/chess/make_data.pipe
fi
# The input pipeline alone first: chess.pipe's `train` repeats forever (it feeds training), so take
# 1,000 batches of 512, with the summary of where the time goes.
./build/pipec run examples/chess/chess.pipe --take "${TAKE:-1000}"
echo
# Then the train block: STEPS (150) steps, the held-out loss against the baseline, the weights saved.
bash scripts/quickstart_train.sh

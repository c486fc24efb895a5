#!/usr/bin/env bash
# Chess pipeline benchmark (seed 002): examples/s of pipec and of its peers on the same files, in one
# run, printed as a table with ratios. Peers that are not installed are skipped and say so.
#
#   bench/chess/run.sh [BATCHES]        # default 400 batches of 512 per measured run, median of 3 runs
#
# Peers: tf.data running seed 002's original per-element code and the accepted answer's vectorized
# version (needs `pip install tensorflow-cpu`), and a hand-written C++ loop (bench/chess/handwritten.cpp).
set -euo pipefail
cd "$(dirname "$0")/../.."
BATCHES=${1:-400}
RUNS=${RUNS:-3}
PIPEC=${PIPEC:-build/pipec}
DATA=examples/chess/data

[ -x "$PIPEC" ] || bash scripts/build.sh --target pipec >/dev/null
if ! ls $DATA/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data in $DATA ..." >&2
  "$PIPEC" run examples/chess/make_data.pipe --quiet
fi

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

pipec_rate() {
  local tmp; tmp=$(mktemp)
  "$PIPEC" run examples/chess/chess.pipe --take "$BATCHES" --quiet --stats-json "$tmp" "$@"
  python3 -c "import json,sys; print(json.load(open('$tmp'))['examples_per_second'])"
  rm -f "$tmp"
}

declare -A rate
rate[pipec]=$(for i in $(seq "$RUNS"); do pipec_rate; done | median)
if python3 -c "import tensorflow" 2>/dev/null; then
  for mode in original vectorized; do
    rate[tfdata_$mode]=$(for i in $(seq "$RUNS"); do
      python3 bench/chess/tfdata_peer.py --files "$DATA/chess-*.tfrecord" --mode $mode --batches "$BATCHES"; done | median)
  done
else
  echo "tensorflow is not installed: skipping the tf.data peers (pip install tensorflow-cpu)" >&2
fi
if [ -x build/bench/chess_handwritten ]; then
  rate[handwritten]=$(for i in $(seq "$RUNS"); do build/bench/chess_handwritten "$DATA" "$BATCHES"; done | median)
fi

printf '\nchess pipeline, %s batches of 512, median of %s runs, %s cores\n' "$BATCHES" "$RUNS" "$(nproc)"
printf '%-22s %14s %12s\n' "pipeline" "examples/s" "pipec / it"
for k in pipec tfdata_original tfdata_vectorized handwritten; do
  v=${rate[$k]:-}
  [ -n "$v" ] || continue
  printf '%-22s %14.0f %12.2f\n' "$k" "$v" "$(python3 -c "print(${rate[pipec]} / $v)")"
done

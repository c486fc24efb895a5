#!/usr/bin/env bash
# Chess pipeline benchmark (seed 002): examples/s of pipec and of its peers on the same files, in one
# run, printed as one table (median of RUNS runs each) with ratios, CPU time, and the output bytes/s as
# a share of this machine's memory-copy bandwidth. Peers or flags that are not available are skipped
# with a note.
#
#   bench/chess/run.sh [BATCHES]        # default 400 batches of 512 per measured run, median of 3 runs
#
# Rows: pipec (default), pipec on examples/chess/chess_repeat_first.pipe (the same work written
# shuffle | repeat | map | batch), pipec -O0 and pipec --no-jit (when `pipec run --help` lists them), the
# hand-written C++ loop (bench/chess/handwritten.cpp) with 1 and 2 threads, tf.data running the seed's
# original per-element code and the accepted answer's vectorized version (bench/chess/tfdata_peer.py,
# needs TensorFlow: PYTHON=/path/to/python, default /work/tfvenv/bin/python or python3), and the memcpy
# probe (bench/memcpy_bandwidth.cpp).
# Columns: examples/s (wall clock, over the measured batches), CPU-s per 1M examples (user + system time
# of the whole process, start-up and warm-up included, divided by the examples it delivered), the same
# after start-up (for pipec and the hand-written loop: a run of one batch is timed too, and its CPU
# time, the start-up, is taken off: what each further example costs), pipec's rate over the row's,
# output MB/s and its share of the memcpy bandwidth.
set -euo pipefail
cd "$(dirname "$0")/../.."
BATCHES=${1:-400}
RUNS=${RUNS:-3}
PIPEC=${PIPEC:-build/pipec}
DATA=examples/chess/data
BOARD_BYTES=$((512 * (8 * 8 * 24 + 10 + 1) * 4))  # one batch of the chess pipeline's output, f32

[ -x "$PIPEC" ] || bash scripts/build.sh --target pipec >/dev/null
if ! ls $DATA/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data in $DATA ..." >&2
  "$PIPEC" run examples/chess/make_data.pipe --quiet
fi
mkdir -p build/bench
bash bench/chess/build_handwritten.sh || echo "note: could not build chess_handwritten" >&2
if [ ! -x build/bench/memcpy_bandwidth ] || [ bench/memcpy_bandwidth.cpp -nt build/bench/memcpy_bandwidth ]; then
  g++ -std=c++20 -O2 bench/memcpy_bandwidth.cpp -lpthread -o build/bench/memcpy_bandwidth
fi

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run_timed NAME CMD...: runs CMD, appends its stdout's last line (examples/s) to $TMP/NAME.rate and
# its CPU seconds to $TMP/NAME.cpu. With START=1: only its CPU seconds, to $TMP/NAME.cpu1.
run_timed() {
  local name=$1; shift
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$@" >"$TMP/out" 2>"$TMP/err" || {
    echo "note: $name failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  if [ "${START:-0}" = 1 ]; then awk '{print $1 + $2}' "$TMP/time" >>"$TMP/$name.cpu1"; return 0; fi
  tail -1 "$TMP/out" >>"$TMP/$name.rate"
  awk '{print $1 + $2}' "$TMP/time" >>"$TMP/$name.cpu"
}

# run_pipec NAME FLAGS...: one pipec run of $SPEC (default examples/chess/chess.pipe); examples/s from
# its --stats-json (parsed outside the timing). With START=1: one batch, its CPU seconds to
# $TMP/NAME.cpu1.
run_pipec() {
  local name=$1; shift
  local take=$BATCHES
  [ "${START:-0}" = 1 ] && take=1
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$PIPEC" run "${SPEC:-examples/chess/chess.pipe}" --take "$take" --quiet \
    --stats-json "$TMP/stats.json" "$@" 2>"$TMP/err" || { echo "note: $name failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  if [ "${START:-0}" = 1 ]; then awk '{print $1 + $2}' "$TMP/time" >>"$TMP/$name.cpu1"; return 0; fi
  python3 -c "import json; print(json.load(open('$TMP/stats.json'))['examples_per_second'])" >>"$TMP/$name.rate"
  awk '{print $1 + $2}' "$TMP/time" >>"$TMP/$name.cpu"
}

HELP=$("$PIPEC" run --help 2>&1 || true)
PY=${PYTHON:-/work/tfvenv/bin/python}
[ -x "$PY" ] || PY=python3
HAVE_TF=0
"$PY" -c "import tensorflow" 2>/dev/null && HAVE_TF=1

for i in $(seq "$RUNS"); do
  run_pipec pipec
  SPEC=examples/chess/chess_repeat_first.pipe run_pipec pipec_repeat_first
  if grep -q -- "-O0" <<<"$HELP"; then run_pipec pipec_O0 -O0; fi
  if grep -q -- "--no-jit" <<<"$HELP"; then run_pipec pipec_nojit --no-jit; fi
  if [ -x build/bench/chess_handwritten ]; then
    run_timed handwritten_1t build/bench/chess_handwritten "$DATA" "$BATCHES" --threads 1
    run_timed handwritten_2t build/bench/chess_handwritten "$DATA" "$BATCHES" --threads 2
  fi
  # The start-up runs (one batch) of the rows that get the "after start-up" column.
  START=1 run_pipec pipec
  if [ -x build/bench/chess_handwritten ]; then
    START=1 run_timed handwritten_1t build/bench/chess_handwritten "$DATA" 1 --threads 1
    START=1 run_timed handwritten_2t build/bench/chess_handwritten "$DATA" 1 --threads 2
  fi
  if [ $HAVE_TF = 1 ]; then
    for mode in original vectorized; do
      run_timed tfdata_$mode "$PY" bench/chess/tfdata_peer.py --files "$DATA/chess-*.tfrecord" --mode $mode --batches "$BATCHES"
    done
  fi
done
grep -q -- "-O0" <<<"$HELP" || echo "note: pipec run has no -O0 flag: row skipped" >&2
grep -q -- "--no-jit" <<<"$HELP" || echo "note: pipec run has no --no-jit flag: row skipped" >&2
[ $HAVE_TF = 1 ] || echo "note: TensorFlow not found for $PY: tf.data rows skipped" >&2

MEMCPY_1=$(build/bench/memcpy_bandwidth 256 1 2>/dev/null)
MEMCPY_N=$(build/bench/memcpy_bandwidth 256 "$(nproc)" 2>/dev/null)

get() { [ -s "$TMP/$1.$2" ] && median <"$TMP/$1.$2" || echo ""; }
PIPEC_RATE=$(get pipec rate)
printf '\nchess pipeline: %s batches of 512 per run, median of %s runs; %s cores (%s), load average %s\n' \
  "$BATCHES" "$RUNS" "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'memcpy bandwidth: %.2f GB/s written with 1 thread, %.2f GB/s with %s\n\n' \
  "$(python3 -c "print($MEMCPY_1/1e9)")" "$(python3 -c "print($MEMCPY_N/1e9)")" "$(nproc)"
printf '%-20s %12s %14s %16s %11s %12s %10s\n' "pipeline" "examples/s" "CPU-s / 1M ex" "after start-up" "pipec / it" \
  "output MB/s" "% memcpy"
for k in pipec pipec_repeat_first pipec_O0 pipec_nojit handwritten_1t handwritten_2t tfdata_original tfdata_vectorized; do
  rate=$(get $k rate)
  [ -n "$rate" ] || continue
  cpu=$(get $k cpu)
  cpu1=$(get $k cpu1)
  python3 - "$k" "$rate" "$cpu" "$PIPEC_RATE" "$BOARD_BYTES" "$MEMCPY_1" "$BATCHES" "$cpu1" <<'EOF'
import sys
name, rate, cpu, pipec, batch_bytes, memcpy, batches, cpu1 = sys.argv[1:]
rate, cpu, pipec, memcpy = float(rate), float(cpu), float(pipec or 0), float(memcpy)
examples = int(batches) * 512
after = f"{(cpu - float(cpu1)) / (examples - 512) * 1e6:16.3f}" if cpu1 and examples > 512 else f"{'-':>16}"
mbs = rate / 512 * int(batch_bytes) / 1e6
print(f"{name:<20} {rate:12.0f} {cpu / examples * 1e6:14.3f} {after} {pipec / rate if pipec else float('nan'):11.2f} "
      f"{mbs:12.0f} {100 * mbs * 1e6 / memcpy:9.1f}%")
EOF
done

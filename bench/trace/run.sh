#!/usr/bin/env bash
# Tracing overhead: `pipec run` without --trace, with --trace, and (BASELINE=path/to/pipec) a pipec built
# without the tracing code, on the same specs, runs interleaved, median of RUNS (5). Prints one table.
#
#   BASELINE=../base/build/pipec bench/trace/run.sh     # WORKLOADS="chess small_chunks deblur chess_train", STEPS=20
#
# Workloads: the chess example (2000 batches of 512: few, large chunks), a pipeline of many small
# chunks (range | map | batch(4): 50,000 batches, the most spans per second a cheap pipeline makes) and
# the deblur example (image decoding in chunks of 8; the bench/autotune copy with repeat(), 60 batches),
# and training the chess train block for STEPS (20) steps (a span per step and one per phase, beside
# the pipeline's; its rate is the training loop's examples/s).
# Columns: examples/s over the run's loop (writing the trace file comes after it and is not in it),
# the rate over the run without a trace, the whole process's wall seconds (file writing included),
# the process's CPU seconds (user + system; steadier than wall time on a shared machine), and the trace
# events recorded per second of the loop. The baseline runs with its default map and
# prefetch sizes; the other rows with --no-autotune, which keeps the same values, so the rows differ
# only by what tracing costs (and, against the baseline, by the statistics and the memory budget's
# bookkeeping of this build).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
PIPEC=${PIPEC:-build/pipec}
BASELINE=${BASELINE:-}
PY=${PYTHON:-python3}
W=build/bench/trace
mkdir -p "$W"
[ -x "$PIPEC" ] || bash scripts/build.sh --target pipec >/dev/null
ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1 || "$PIPEC" run examples/chess/make_data.pipe --quiet
cat >"$W/small_chunks.pipe" <<'EOF'
pipeline p = range(200000)
  | map(r => { x: f32(r.value) * 2.0, y: r.value % 7 })
  | batch(4)
  | prefetch(auto)
EOF
DEBLUR=build/bench/autotune/deblur/deblur.pipe
if [ ! -d build/bench/autotune/deblur/data/sharp ]; then
  mkdir -p build/bench/autotune/deblur
  cp examples/deblur/make_data.pipe build/bench/autotune/deblur/
  "$PIPEC" run build/bench/autotune/deblur/make_data.pipe -D PAIRS=96 --quiet
fi
sed -e 's/^  | prefetch(auto)$/  | repeat()\n  | prefetch(auto)/' -e 's/^  epochs = [0-9]*.*$/  steps = 100  # a repeat() forever needs steps/' examples/deblur/deblur.pipe >"$DEBLUR"

# The chess train block without its validation (a copy beside the spec, for its relative data paths):
# evaluating the held-out positions after the last step would be in the run's seconds but is no step.
CHESS_TRAIN=examples/chess/.chess_train_trace_bench.pipe
sed -e '/^ *validation = /d' -e '/^ *metrics = /d' examples/chess/chess.pipe >"$CHESS_TRAIN"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "$CHESS_TRAIN"' EXIT
declare -A SPEC ARGS
SPEC[chess]=examples/chess/chess.pipe; ARGS[chess]="--take 2000"
SPEC[small_chunks]=$W/small_chunks.pipe; ARGS[small_chunks]=""
SPEC[deblur]=$DEBLUR; ARGS[deblur]="--pipeline train --take 60"
SPEC[chess_train]=$CHESS_TRAIN; ARGS[chess_train]="--steps ${STEPS:-20}"

# one KEY BINARY FLAGS...: appends "examples/s wall_seconds events cpu_seconds" to $TMP/KEY.
one() {
  local key=$1 bin=$2; shift 2
  local start end
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  /usr/bin/time -f "%U %S" -o "$TMP/cpu" "$bin" run "${SPEC[$WL]}" ${ARGS[$WL]} --threads 2 --quiet --stats-json "$TMP/s.json" "$@" 2>"$TMP/err" ||
    { echo "note: $WL $key failed: $(tail -2 "$TMP/err")" >&2; return 0; }
  end=$(date +%s.%N)
  local cpu; cpu=$(awk '{print $1 + $2}' "$TMP/cpu")
  local events=0
  [ -f "$TMP/t.json" ] && events=$(grep -c '"ph": "[XCi]"' "$TMP/t.json" || true)
  rm -f "$TMP/t.json"
  "$PY" -c "import json; j = json.load(open('$TMP/s.json')); print(j['examples_per_second'], $end - $start, $events / j['seconds'], $cpu)" >>"$TMP/$key"
}
median_of() { [ -s "$TMP/$1" ] || return 0; sort -g -k"$2" "$TMP/$1" | awk -v c="$2" '{a[NR]=$c} END {if (NR) print a[int((NR+1)/2)]}'; }

printf 'tracing overhead, median of %s runs, %s cores, load average %s\n' "$RUNS" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %-22s %14s %8s %8s %8s %14s\n' "workload" "run" "examples/s" "/ off" "wall s" "CPU s" "events/s"
for WL in ${WORKLOADS:-chess small_chunks deblur chess_train}; do
  rm -f "$TMP"/row_*
  for r in $(seq "$RUNS"); do
    one row_off "$PIPEC" --no-autotune
    one row_on "$PIPEC" --no-autotune --trace "$TMP/t.json"
    [ -n "$BASELINE" ] && one row_base "$BASELINE"
  done
  off=$(median_of row_off 1)
  [ -n "$off" ] || continue
  row() {
    [ -s "$TMP/$2" ] || return 0
    local rate; rate=$(median_of "$2" 1)
    printf '%-14s %-22s %14.1f %8.3f %8.2f %8.2f %14.0f\n' "$WL" "$1" "$rate" "$(awk -v a="$rate" -v b="$off" 'BEGIN {print a / b}')" \
      "$(median_of "$2" 2)" "$(median_of "$2" 4)" "$(median_of "$2" 3)"
  }
  row "tracing off" row_off
  row "tracing on" row_on
  row "baseline (no tracing)" row_base
done
printf 'load average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"

# What one event costs to record, with no pipeline around it (bench/trace/record_cost.cpp).
[ -x build/bench/trace_record_cost ] || cmake --build build --target trace_record_cost >/dev/null
printf '\nrecording alone (build/bench/trace_record_cost: a span and a counter sample per iteration, best of 5):\n'
build/bench/trace_record_cost

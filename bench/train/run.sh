#!/usr/bin/env bash
# Training on the CPU, one table: the chess net (examples/chess/chess.pipe) at batch 512, f32.
#
#   reference   `pipec run examples/chess/chess.pipe --steps REF_STEPS --threads 1 --executor reference`: the whole training step
#               (layers, loss, the gradient pass's backward nodes, the optimizer, fed by the input
#               pipeline) on the reference executor: plain loops with f64 accumulation on one thread, the
#               oracle the fast kernels are tested against, not a fast path
#   oneDNN      forward + backward of the net's layers alone on the oneDNN training kernels
#               (train_chess_step): the compute limit of a step on the CPU
#   PyTorch     PyTorch's eager CPU step on the same layers, shapes and threads (torch_peer.py, when
#               PYTHON has torch; skipped with a note otherwise)
# Then the reference executor's time by phase, the oneDNN step's per-call breakdown, and oneDNN's eltwise
# against plain loops. The fast executor's whole step beside PyTorch's: bench/train/compare.sh.
#
#   bench/train/run.sh [STEPS]     # STEPS timed steps per kernel run (default 20, after 3 warm-up steps)
#
# Every row runs RUNS times (default 3), interleaved with the others so that a burst of load on a shared
# machine hits all rows alike; a cell is the median over runs of each run's median step. Columns:
#   ms/step      wall clock per step (median), and the fastest step seen (reference: the fastest run's mean
#                step, from the training loop's time in --stats-json)
#   CPU ms/step  user + system CPU time of the process per step: on a shared machine the cost of the
#                work itself (with 2 threads it also counts OpenMP's and PyTorch's spin-waits; the
#                reference row counts the whole process: start-up, compilation and the input pipeline)
#   GFLOP/s      12.29 GFLOP per step (the products of forward, backward-data but the first layer's,
#                backward-weights; the reference step computes the same products plus the loss and the
#                optimizer, a rounding error beside them) over the median wall time, and over the fastest
#   per CPU-s    GFLOP per CPU-second: with one thread the speed of a core that nothing else wanted; with
#                more, the efficiency per core
set -euo pipefail
cd "$(dirname "$0")/../.."
STEPS=${1:-20}
REF_STEPS=${REF_STEPS:-3}
RUNS=${RUNS:-3}
THREADS=${THREADS:-"1 2"}
PYTHON=${PYTHON:-/work/tfvenv/bin/python}
BUILD=${BUILD:-build}
PIPEC=${PIPEC:-$BUILD/pipec}
# The example trains in mixed_bf16 (rounded operands, f32 arithmetic on this CPU); the benchmark is fp32:
# an fp32 copy beside it (its data paths are relative to its folder; .gitignore lists it), removed on exit.
SPEC=${SPEC:-examples/chess/.chess_fp32_bench.pipe}
if [ "$SPEC" = examples/chess/.chess_fp32_bench.pipe ]; then
  # It also leaves out the block's validation: evaluating the held-out positions after the last step
  # (on the reference executor) is no step's time.
  sed -e 's/precision = mixed_bf16/precision = fp32/' -e '/^ *validation = /d' -e '/^ *metrics = /d' \
    examples/chess/chess.pipe >"$SPEC"
  FP32_COPY=$SPEC
  grep -q 'precision = fp32' "$SPEC" && ! grep -q '^ *validation = ' "$SPEC" ||
    { echo "bench: no fp32 copy of examples/chess/chess.pipe without its validation" >&2; exit 1; }
fi

[ -x "$BUILD/bench/train_chess_step" ] && [ -x "$BUILD/bench/train_eltwise_vs_loops" ] && [ -x "$PIPEC" ] ||
  cmake --build "$BUILD" --target train_chess_step train_eltwise_vs_loops pipec >/dev/null
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data in examples/chess/data ..." >&2
  "$PIPEC" run examples/chess/make_data.pipe --quiet
fi

HAVE_TORCH=0
if "$PYTHON" -c "import torch" >/dev/null 2>&1; then HAVE_TORCH=1; fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP" ${FP32_COPY:+"$FP32_COPY"}' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run_row NAME CMD...: appends the RESULT line's fields to $TMP/NAME.
run_row() {
  local name=$1; shift
  "$@" --steps "$STEPS" >"$TMP/out" 2>"$TMP/err" || { echo "note: $name failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  grep '^RESULT' "$TMP/out" | cut -d' ' -f2- >>"$TMP/$name"
  grep -v '^RESULT' "$TMP/out" | head -1 >"$TMP/$name.desc"
}

# run_reference: one training run of the chess train block; appends "ms/step ms/step CPU-ms/step" to
# $TMP/reference_1 and the run's --stats-json path to $TMP/reference.json.
run_reference() {
  local json="$TMP/reference.$(date +%s%N).json"
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$PIPEC" run "$SPEC" --steps "$REF_STEPS" --threads 1 --executor reference --quiet --stats-json "$json" \
    2>"$TMP/err" || { echo "note: reference failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  python3 - "$json" "$(cat "$TMP/time")" >>"$TMP/reference_1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
user, system = map(float, sys.argv[2].split())
ms = 1e3 * s["seconds"] / s["steps"]
print(f"{ms:.3f} {ms:.3f} {1e3 * (user + system) / s['steps']:.3f}")
PY
  echo "$json" >>"$TMP/reference.json"
}

ROWS=(reference_1)
for t in $THREADS; do
  ROWS+=("onednn_nhwc_$t" "onednn_any_$t")
  [ $HAVE_TORCH = 1 ] && ROWS+=("torch_nchw_$t" "torch_cl_$t")
done
for run in $(seq "$RUNS"); do
  run_reference
  for t in $THREADS; do
    run_row "onednn_nhwc_$t" "$BUILD/bench/train_chess_step" --threads "$t" --layout nhwc
    run_row "onednn_any_$t" "$BUILD/bench/train_chess_step" --threads "$t" --layout any
    if [ $HAVE_TORCH = 1 ]; then
      run_row "torch_nchw_$t" "$PYTHON" bench/train/torch_peer.py --threads "$t"
      run_row "torch_cl_$t" "$PYTHON" bench/train/torch_peer.py --threads "$t" --channels-last
    fi
  done
done

GFLOP=$(cat "$TMP"/onednn_nhwc_* 2>/dev/null | head -1 | cut -d' ' -f4)  # train_chess_step counts it
GFLOP=${GFLOP:-12.2896}
echo "chess net, training step, batch 512, f32 ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf "%-58s %7s %8s %8s %11s %8s %10s %10s %10s\n" "row" "threads" "ms/step" "fastest" "CPU ms/step" "GFLOP/s" "at fastest" "per CPU-s" "examples/s"
for name in "${ROWS[@]}"; do
  [ -s "$TMP/$name" ] || continue
  med=$(cut -d' ' -f1 "$TMP/$name" | median)
  best=$(cut -d' ' -f2 "$TMP/$name" | sort -g | head -1)
  cpu=$(cut -d' ' -f3 "$TMP/$name" | median)
  t=${name##*_}
  case $name in
    reference_*) label="pipec run, reference executor (whole step, $REF_STEPS steps)" ;;
    onednn_nhwc_*) label="oneDNN $(sed 's/^oneDNN \([^ ]*\) (\([^)]*\)).*/\1 \2/' "$TMP/$name.desc"), NHWC, layers only" ;;
    onednn_any_*) label="oneDNN, oneDNN-chosen activation layouts, layers only" ;;
    torch_nchw_*) label="PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)') eager, NCHW, layers only" ;;
    torch_cl_*) label="PyTorch eager, channels_last, layers only" ;;
  esac
  awk -v l="$label" -v t="$t" -v m="$med" -v b="$best" -v c="$cpu" -v g="$GFLOP" \
    'BEGIN { printf "%-58s %7s %8.1f %8.1f %11.1f %8.1f %10.1f %10.1f %10.0f\n", l, t, m, b, c, g / (m / 1e3), g / (b / 1e3), g / (c / 1e3), 512 / (m / 1e3) }'
done
[ $HAVE_TORCH = 1 ] || echo "note: PyTorch rows skipped: $PYTHON cannot import torch (set PYTHON=...)"
if [ -s "$TMP/reference.json" ]; then
  # The reference run with the median step: where its training loop's time went.
  python3 - $(cat "$TMP/reference.json") <<'PY'
import json, sys
runs = sorted((json.load(open(p)) for p in sys.argv[1:]), key=lambda s: s["seconds"])
s = runs[len(runs) // 2]
share = lambda k: f"{100 * s[k] / s['seconds']:.1f}%"
print(f"reference executor, share of the training loop: input wait {share('input_wait_seconds')}, forward "
      f"{share('forward_seconds')}, loss {share('loss_seconds')}, backward {share('backward_seconds')}, "
      f"optimizer {share('optimizer_seconds')}")
PY
fi
echo
"$BUILD/bench/train_chess_step" --threads 1 --breakdown --steps "$STEPS" | grep -v '^RESULT'
echo
"$BUILD/bench/train_eltwise_vs_loops"

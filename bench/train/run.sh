#!/usr/bin/env bash
# The chess net's compute limit on the CPU: forward + backward of its layers alone at batch 512, f32,
# on the oneDNN training kernels (train_chess_step) and, in the same run with the same threads, PyTorch's
# eager CPU step on the same shapes (torch_peer.py, when PYTHON has torch; skipped with a note
# otherwise). Then the element-wise table: oneDNN's eltwise against plain loops.
#
#   bench/train/run.sh [STEPS]     # STEPS timed steps per run (default 20, after 3 warm-up steps)
#
# Every row runs RUNS times (default 3), interleaved with the others so that a burst of load on a shared
# machine hits all rows alike; a cell is the median over runs of each run's median step. Columns:
#   ms/step      wall clock per step (median), and the fastest step seen
#   CPU ms/step  user + system CPU time of the process per step: on a shared machine the cost of the
#                work itself (with 2 threads it also counts OpenMP's and PyTorch's spin-waits)
#   GFLOP/s      12.29 GFLOP per step (the products of forward, backward-data but the first layer's,
#                backward-weights) over the median wall time, and over the fastest
#   per CPU-s    GFLOP per CPU-second: with one thread the speed of a core that nothing else wanted; with
#                more, the efficiency per core
set -euo pipefail
cd "$(dirname "$0")/../.."
STEPS=${1:-20}
RUNS=${RUNS:-3}
THREADS=${THREADS:-"1 2"}
PYTHON=${PYTHON:-/work/tfvenv/bin/python}
BUILD=${BUILD:-build}

[ -x "$BUILD/bench/train_chess_step" ] && [ -x "$BUILD/bench/train_eltwise_vs_loops" ] ||
  cmake --build "$BUILD" --target train_chess_step train_eltwise_vs_loops >/dev/null

HAVE_TORCH=0
if "$PYTHON" -c "import torch" >/dev/null 2>&1; then HAVE_TORCH=1; fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run_row NAME CMD...: appends the RESULT line's fields to $TMP/NAME.
run_row() {
  local name=$1; shift
  "$@" --steps "$STEPS" >"$TMP/out" 2>"$TMP/err" || { echo "note: $name failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  grep '^RESULT' "$TMP/out" | cut -d' ' -f2- >>"$TMP/$name"
  grep -v '^RESULT' "$TMP/out" | head -1 >"$TMP/$name.desc"
}

ROWS=()
for t in $THREADS; do
  ROWS+=("onednn_nhwc_$t" "onednn_any_$t")
  [ $HAVE_TORCH = 1 ] && ROWS+=("torch_nchw_$t" "torch_cl_$t")
done
for run in $(seq "$RUNS"); do
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
echo "chess net, layers only, forward + backward, batch 512, f32 ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf "%-48s %7s %8s %8s %11s %8s %10s %10s %10s\n" "row" "threads" "ms/step" "fastest" "CPU ms/step" "GFLOP/s" "at fastest" "per CPU-s" "examples/s"
for name in "${ROWS[@]}"; do
  [ -s "$TMP/$name" ] || continue
  med=$(cut -d' ' -f1 "$TMP/$name" | median)
  best=$(cut -d' ' -f2 "$TMP/$name" | sort -g | head -1)
  cpu=$(cut -d' ' -f3 "$TMP/$name" | median)
  t=${name##*_}
  case $name in
    onednn_nhwc_*) label="oneDNN $(sed 's/^oneDNN \([^ ]*\) (\([^)]*\)).*/\1 \2/' "$TMP/$name.desc"), NHWC activations" ;;
    onednn_any_*) label="oneDNN, oneDNN-chosen activation layouts" ;;
    torch_nchw_*) label="PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)') eager, NCHW" ;;
    torch_cl_*) label="PyTorch eager, channels_last" ;;
  esac
  awk -v l="$label" -v t="$t" -v m="$med" -v b="$best" -v c="$cpu" -v g="$GFLOP" \
    'BEGIN { printf "%-48s %7s %8.1f %8.1f %11.1f %8.1f %10.1f %10.1f %10.0f\n", l, t, m, b, c, g / (m / 1e3), g / (b / 1e3), g / (c / 1e3), 512 / (m / 1e3) }'
done
[ $HAVE_TORCH = 1 ] || echo "note: PyTorch rows skipped: $PYTHON cannot import torch (set PYTHON=...)"
echo
"$BUILD/bench/train_chess_step" --threads 1 --breakdown --steps "$STEPS" | grep -v '^RESULT'
echo
"$BUILD/bench/train_eltwise_vs_loops"

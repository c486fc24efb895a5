#!/usr/bin/env bash
# The whole training step of the chess net (examples/chess/chess.pipe), batch 512, fp32, side by side in
# one run on the same threads:
#
#   pipec run      `pipec run examples/chess/chess.pipe --steps STEPS --threads T`: the fast executor fed
#                  by the input pipeline (TFRecords, unpacking, shuffle, batching), the whole process;
#                  its convolutions by Winograd where oneDNN has it (AVX-512 CPUs)
#   pipec run --conv direct   the same with the direct convolution algorithm (what PyTorch's CPU
#                  convolutions use)
#   PyTorch, preloaded    bench/train/torch_train.py --feed preloaded: the same model, mse, Adam; batches
#                  made up front (the step alone)
#   PyTorch, DataLoader   --feed dataloader: the same step fed by a DataLoader over the same TFRecords
#                  with the seed's unpacking in Python (bench/python/chess_peers.py), WORKERS workers
#   compute limit  build/bench/train_chess_step: oneDNN's forward + backward primitives of the four
#                  layers alone, on the same shapes and threads and with the algorithms `pipec run` takes
#                  (no loss, optimizer, element-wise work or input)
#
#   bench/train/compare.sh [STEPS]     # default 30 steps per run; RUNS runs (default 3), interleaved
#
# Columns: ms/step (median over runs; pipec's is the run's seconds / steps, its first step included),
# CPU ms/step (user + system of the process and its children: pipec's includes compiling the spec and the
# input pipeline; on a machine shared with others this is the comparable figure), examples/s from the
# median, input wait (share of the time the step waited for its batch), and each row against PyTorch.
#
# Every row runs with the same OpenMP wait policy: OMP_WAIT_POLICY (passive unless set), which
# `pipec run` chooses by itself (compiler/driver/openmp_waits.h) and PyTorch's and oneDNN's libgomp
# honour too.
set -euo pipefail
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
cd "$(dirname "$0")/../.."
STEPS=${1:-30}
RUNS=${RUNS:-3}
T=${THREADS:-2}
WORKERS=${WORKERS:-1}
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

[ -x "$BUILD/bench/train_chess_step" ] && [ -x "$PIPEC" ] || cmake --build "$BUILD" --target train_chess_step pipec >/dev/null
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data in examples/chess/data ..." >&2
  "$PIPEC" run examples/chess/make_data.pipe --quiet
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" ${FP32_COPY:+"$FP32_COPY"}' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# Each row appends "ms/step CPU-ms/step input-wait-%" to $TMP/<row>.
run_pipec() {  # run_pipec ROW [FLAGS...]
  local row=$1 json="$TMP/pipec.json"
  shift
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$PIPEC" run "$SPEC" --steps "$STEPS" --threads "$T" --quiet --stats-json "$json" \
    "$@" 2>"$TMP/err" || { echo "note: pipec run $* failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  python3 - "$json" "$(cat "$TMP/time")" >>"$TMP/$row" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
user, system = map(float, sys.argv[2].split())
print(f"{1e3 * s['seconds'] / s['steps']:.3f} {1e3 * (user + system) / s['steps']:.3f} {100 * s['input_wait_seconds'] / s['seconds']:.2f}")
PY
}
run_torch() {  # run_torch ROW FEED
  "$PYTHON" bench/train/torch_train.py chess --feed "$2" --threads "$T" --workers "$WORKERS" --steps "$STEPS" >"$TMP/out" 2>"$TMP/err" ||
    { echo "note: PyTorch $2 failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  grep '^RESULT' "$TMP/out" | awk '{print $2, $4, $6}' >>"$TMP/$1"
}
run_limit() {
  "$BUILD/bench/train_chess_step" --threads "$T" --layout nhwc --steps "$STEPS" >"$TMP/out" 2>"$TMP/err" ||
    { echo "note: train_chess_step failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  grep '^RESULT' "$TMP/out" | awk '{print $2, $4, 0}' >>"$TMP/limit"
}
HAVE_TORCH=0
"$PYTHON" -c "import torch" >/dev/null 2>&1 && HAVE_TORCH=1
for run in $(seq "$RUNS"); do
  run_pipec pipec
  run_pipec pipec_direct --conv direct
  run_limit
  if [ $HAVE_TORCH = 1 ]; then
    run_torch torch_pre preloaded
    run_torch torch_dl dataloader
  fi
done

echo "chess net, whole training step, batch 512, fp32, $T threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY, $STEPS steps x $RUNS interleaved runs ($(nproc) cores;" \
  "load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after)"
printf "%-44s %9s %12s %11s %11s %12s %12s\n" "row" "ms/step" "CPU ms/step" "examples/s" "input wait" "vs PyTorch" "vs PyTorch"
printf "%-44s %9s %12s %11s %11s %12s %12s\n" "" "" "" "" "" "preloaded" "DataLoader"
stat() { cut -d' ' -f"$2" "$TMP/$1" | median; }
for row in pipec pipec_direct limit torch_pre torch_dl; do
  [ -s "$TMP/$row" ] || continue
  case $row in
    pipec) label="pipec run (fast executor, input pipeline)" ;;
    pipec_direct) label="pipec run --conv direct" ;;
    limit) label="compute limit (oneDNN primitives alone)" ;;
    torch_pre) label="PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)'), preloaded tensors" ;;
    torch_dl) label="PyTorch, DataLoader ($WORKERS worker)" ;;
  esac
  ms=$(stat $row 1); cpu=$(stat $row 2); wait=$(stat $row 3)
  pre=$([ -s "$TMP/torch_pre" ] && stat torch_pre 1 || echo 0)
  dl=$([ -s "$TMP/torch_dl" ] && stat torch_dl 1 || echo 0)
  awk -v l="$label" -v m="$ms" -v c="$cpu" -v w="$wait" -v p="$pre" -v d="$dl" -v r="$row" 'BEGIN {
    vp = p > 0 ? sprintf("%.2fx", p / m) : "-"; vd = d > 0 ? sprintf("%.2fx", d / m) : "-";
    ws = r == "limit" ? "-" : sprintf("%.1f%%", w);
    printf "%-44s %9.1f %12.1f %11.0f %11s %12s %12s\n", l, m, c, 512 / (m / 1e3), ws, vp, vd }'
done
if [ -s "$TMP/pipec" ] && [ -s "$TMP/limit" ]; then
  awk -v p="$(stat pipec 1)" -v l="$(stat limit 1)" -v pc="$(stat pipec 2)" -v lc="$(stat limit 2)" \
    'BEGIN { printf "pipec run reaches %.0f%% of the compute limit by wall time, %.0f%% by CPU time\n", 100 * l / p, 100 * lc / pc }'
fi
[ $HAVE_TORCH = 1 ] || echo "note: PyTorch rows skipped: $PYTHON cannot import torch (set PYTHON=...)"

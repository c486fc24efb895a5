#!/usr/bin/env bash
# The whole training step of the chess net (examples/chess/chess.pipe), batch 512, in fp32 and in
# mixed_bf16, side by side in one run on the same threads:
#
#   pipec run      `pipec run examples/chess/chess.pipe --steps STEPS --threads T`: the fast executor fed
#                  by the input pipeline (TFRecords, unpacking, shuffle, batching), the whole process;
#                  fp32: its convolutions by Winograd where oneDNN has it (AVX-512 CPUs); mixed_bf16 (the
#                  spec as written): conv2d and dense on oneDNN's bf16 kernels where the CPU has bf16
#                  instructions (AVX512_BF16, AMX), else emulated on the f32 kernels
#   pipec run --conv direct   fp32 with the direct convolution algorithm (what PyTorch's CPU
#                  convolutions use)
#   pipec run --cpu-bf16 emulated   mixed_bf16 rounded to bf16 and multiplied on the f32 kernels (what
#                  CPUs without bf16 instructions run)
#   PyTorch, preloaded    bench/train/torch_train.py --feed preloaded: the same model, mse, Adam; batches
#                  made up front (the step alone); fp32, and bf16 under torch.autocast (its CPU mixed
#                  precision)
#   PyTorch, DataLoader   --feed dataloader: the same step fed by a DataLoader over the same TFRecords
#                  with the seed's unpacking in Python (bench/python/chess_peers.py), WORKERS workers
#   compute limit  build/bench/train_chess_step: oneDNN's forward + backward primitives of the four
#                  layers alone, fp32, on the same shapes and threads and with the algorithms `pipec run`
#                  takes (no loss, optimizer, element-wise work or input)
#
#   bench/train/compare.sh [STEPS]     # default 30 steps per run; RUNS runs (default 3), interleaved
#
# Columns: the precision, ms/step (median over runs; pipec's is the run's seconds / steps, its first step
# included), CPU ms/step (user + system of the process and its children: pipec's includes compiling the
# spec and the input pipeline; on a machine shared with others this is the comparable figure), examples/s
# from the median, input wait (share of the time the step waited for its batch), and each row against
# PyTorch's row of the same precision (bf16 autocast for mixed_bf16). The first line names the CPU and
# whether it has bf16 instructions.
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
# Copies of the example beside it (its data paths are relative to its folder; .gitignore lists them),
# removed on exit: fp32, and mixed_bf16 as written. Both leave out the block's validation: evaluating the
# held-out positions after the last step is no step's time.
SPEC=${SPEC:-examples/chess/.chess_fp32_bench.pipe}
BF16_SPEC=examples/chess/.chess_bf16_bench.pipe
COPIES=("$BF16_SPEC")
sed -e '/^ *validation = /d' -e '/^ *metrics = /d' examples/chess/chess.pipe >"$BF16_SPEC"
grep -q 'precision = mixed_bf16' "$BF16_SPEC" || { echo "bench: examples/chess/chess.pipe is not mixed_bf16" >&2; exit 1; }
if [ "$SPEC" = examples/chess/.chess_fp32_bench.pipe ]; then
  sed -e 's/precision = mixed_bf16/precision = fp32/' "$BF16_SPEC" >"$SPEC"
  COPIES+=("$SPEC")
  grep -q 'precision = fp32' "$SPEC" && ! grep -q '^ *validation = ' "$SPEC" ||
    { echo "bench: no fp32 copy of examples/chess/chess.pipe without its validation" >&2; exit 1; }
fi

[ -x "$BUILD/bench/train_chess_step" ] && [ -x "$PIPEC" ] || cmake --build "$BUILD" --target train_chess_step pipec >/dev/null
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data in examples/chess/data ..." >&2
  "$PIPEC" run examples/chess/make_data.pipe --quiet
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "${COPIES[@]}"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# Each row appends "ms/step CPU-ms/step input-wait-%" to $TMP/<row>.
run_pipec() {  # run_pipec ROW SPEC [FLAGS...]
  local row=$1 spec=$2 json="$TMP/pipec.json"
  shift 2
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$PIPEC" run "$spec" --steps "$STEPS" --threads "$T" --quiet --stats-json "$json" \
    "$@" 2>"$TMP/err" || { echo "note: pipec run $* failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  python3 - "$json" "$(cat "$TMP/time")" >>"$TMP/$row" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
user, system = map(float, sys.argv[2].split())
print(f"{1e3 * s['seconds'] / s['steps']:.3f} {1e3 * (user + system) / s['steps']:.3f} {100 * s['input_wait_seconds'] / s['seconds']:.2f}")
PY
}
run_torch() {  # run_torch ROW FEED PRECISION
  "$PYTHON" bench/train/torch_train.py chess --feed "$2" --precision "$3" --threads "$T" --workers "$WORKERS" \
    --steps "$STEPS" >"$TMP/out" 2>"$TMP/err" || { echo "note: PyTorch $2 $3 failed: $(tail -3 "$TMP/err")" >&2; return 0; }
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
  run_pipec pipec "$SPEC"
  run_pipec pipec_direct "$SPEC" --conv direct
  run_pipec pipec_bf16 "$BF16_SPEC"
  run_pipec pipec_bf16_emulated "$BF16_SPEC" --cpu-bf16 emulated
  run_limit
  if [ $HAVE_TORCH = 1 ]; then
    run_torch torch_pre preloaded fp32
    run_torch torch_dl dataloader fp32
    run_torch torch_bf16_pre preloaded bf16
    run_torch torch_bf16_dl dataloader bf16
  fi
done

CPU_NAME=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
CPU_BF16=$(grep -qw avx512_bf16 /proc/cpuinfo && echo "AVX512_BF16" || echo "no bf16 instructions")
grep -qw amx_bf16 /proc/cpuinfo && CPU_BF16="$CPU_BF16, AMX"
echo "chess net, whole training step, batch 512, $T threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY, $STEPS steps x $RUNS interleaved runs"
echo "CPU: $CPU_NAME, $(nproc) cores, $CPU_BF16; load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after"
printf "%-46s %-10s %9s %12s %11s %11s %12s %12s\n" "row" "precision" "ms/step" "CPU ms/step" "examples/s" "input wait" "vs PyTorch" "vs PyTorch"
printf "%-46s %-10s %9s %12s %11s %11s %12s %12s\n" "" "" "" "" "" "" "preloaded" "DataLoader"
stat() { cut -d' ' -f"$2" "$TMP/$1" | median; }
TORCH_VERSION=$([ $HAVE_TORCH = 1 ] && "$PYTHON" -c 'import torch; print(torch.__version__)')
for row in pipec pipec_direct pipec_bf16 pipec_bf16_emulated limit torch_pre torch_dl torch_bf16_pre torch_bf16_dl; do
  [ -s "$TMP/$row" ] || continue
  precision=fp32 peer_pre=torch_pre peer_dl=torch_dl
  case $row in
    *bf16*) precision=mixed_bf16 peer_pre=torch_bf16_pre peer_dl=torch_bf16_dl ;;
  esac
  case $row in
    pipec) label="pipec run (fast executor, input pipeline)" ;;
    pipec_direct) label="pipec run --conv direct" ;;
    pipec_bf16) label="pipec run (the spec as written)" ;;
    pipec_bf16_emulated) label="pipec run --cpu-bf16 emulated" ;;
    limit) label="compute limit (oneDNN primitives alone)" ;;
    torch_pre) label="PyTorch $TORCH_VERSION, preloaded tensors" ;;
    torch_dl) label="PyTorch, DataLoader ($WORKERS worker)" ;;
    torch_bf16_pre) label="PyTorch bf16 autocast, preloaded tensors" precision=bf16 ;;
    torch_bf16_dl) label="PyTorch bf16 autocast, DataLoader" precision=bf16 ;;
  esac
  ms=$(stat $row 1); cpu=$(stat $row 2); wait=$(stat $row 3)
  pre=$([ -s "$TMP/$peer_pre" ] && stat $peer_pre 1 || echo 0)
  dl=$([ -s "$TMP/$peer_dl" ] && stat $peer_dl 1 || echo 0)
  awk -v l="$label" -v pr="$precision" -v m="$ms" -v c="$cpu" -v w="$wait" -v p="$pre" -v d="$dl" -v r="$row" 'BEGIN {
    vp = p > 0 ? sprintf("%.2fx", p / m) : "-"; vd = d > 0 ? sprintf("%.2fx", d / m) : "-";
    ws = r == "limit" ? "-" : sprintf("%.1f%%", w);
    printf "%-46s %-10s %9.1f %12.1f %11.0f %11s %12s %12s\n", l, pr, m, c, 512 / (m / 1e3), ws, vp, vd }'
done
if [ -s "$TMP/pipec" ] && [ -s "$TMP/limit" ]; then
  awk -v p="$(stat pipec 1)" -v l="$(stat limit 1)" -v pc="$(stat pipec 2)" -v lc="$(stat limit 2)" \
    'BEGIN { printf "pipec run reaches %.0f%% of the compute limit by wall time, %.0f%% by CPU time\n", 100 * l / p, 100 * lc / pc }'
fi
[ $HAVE_TORCH = 1 ] || echo "note: PyTorch rows skipped: $PYTHON cannot import torch (set PYTHON=...)"

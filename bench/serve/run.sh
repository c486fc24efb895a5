#!/usr/bin/env bash
# Serving the chess net: a model library built by `pipec build --train` against PyTorch's eager CPU
# inference of the same layers, on the same threads. One table:
#
#   pipec     pipe_predict (bench/serve/predict_bench.c): from the records' packed bytes (`d`, u8
#             [rows, 194]) through the preprocessing (unpack, board planes, flags) and the forward pass
#   PyTorch   the net's forward pass alone on ready boards and flags (bench/serve/torch_infer.py,
#             torch.inference_mode(); when PYTHON has torch, else the row says so)
#
#   bench/serve/run.sh [ITERS]    # ITERS timed calls per batch-512 cell (default 20; 10x that for one example)
#
# The example trains in mixed_bf16; the benchmark builds an fp32 copy (PyTorch runs fp32), trains it for
# a few steps (the weights' values do not change the time) and builds its library. PRECISION=mixed_bf16
# keeps the example's precision instead (its layers on bf16 kernels where the CPU has bf16 instructions)
# against PyTorch under torch.autocast("cpu", dtype=torch.bfloat16). Each cell runs RUNS
# times (default 3), interleaved; a cell is the median over runs of each run's median call. Columns:
#   1 example ms     one request of one position: the latency a single query sees
#   512 ms / ex/s    one request of 512 positions, and the examples per second that makes
#   CPU ms           user + system CPU time per call of 512 (OpenMP's spin-waits count with 2 threads)
set -euo pipefail
cd "$(dirname "$0")/../.."
ITERS=${1:-20}
RUNS=${RUNS:-3}
THREADS=${THREADS:-"1 2"}
PYTHON=${PYTHON:-/work/tfvenv/bin/python}
BUILD=${BUILD:-build}
PIPEC=${PIPEC:-$BUILD/pipec}
WORK=$(mktemp -d /tmp/pipec-serve-bench-XXXXXX)
SPEC=examples/chess/.chess_fp32_serve_bench.pipe
trap 'rm -rf "$WORK" "$SPEC"' EXIT

[ -x "$PIPEC" ] || { echo "no $PIPEC: build first (scripts/build.sh)" >&2; exit 2; }
[ -e examples/chess/data/chess-00007-of-00008.tfrecord ] || "$PIPEC" run examples/chess/make_data.pipe --quiet
PRECISION=${PRECISION:-fp32}
case $PRECISION in
  fp32) TORCH_PRECISION=fp32 ;;
  mixed_bf16) TORCH_PRECISION=bf16 ;;
  *) echo "PRECISION must be fp32 or mixed_bf16" >&2; exit 2 ;;
esac
sed "s/precision = mixed_bf16/precision = $PRECISION/" examples/chess/chess.pipe > "$SPEC"
cat >> "$SPEC" <<'PIPE'

pipeline serve_bench_records = held_out_positions | take(512) | map(r => { d: r.d }) | batch(512)
PIPE
"$PIPEC" run "$SPEC" --steps 5 --save "$WORK/w.safetensors" --quiet
"$PIPEC" build "$SPEC" --train chess --weights "$WORK/w.safetensors" -o "$WORK/libchess_serve.so" --quiet
"$PIPEC" run "$SPEC" --pipeline serve_bench_records --output "$WORK/records" --quiet
# The .npy's data: the bytes after its header (whose length is at offset 8, little-endian u16, for v1).
python3 - "$WORK/records/000000/d.npy" "$WORK/d.bin" <<'PY'
import struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<H", raw[8:10])[0]
open(sys.argv[2], "wb").write(raw[10 + n:])
PY
cc -O2 -I "$WORK" '-DLIB_HEADER="libchess_serve.h"' bench/serve/predict_bench.c -o "$WORK/predict_bench" \
  -L "$WORK" -lchess_serve -Wl,-rpath,"$WORK"

HAVE_TORCH=0
if "$PYTHON" -c "import torch" 2>/dev/null; then HAVE_TORCH=1; fi

declare -A CELL
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
for run in $(seq "$RUNS"); do
  for t in $THREADS; do
    for batch in 1 512; do
      iters=$ITERS
      [ "$batch" = 1 ] && iters=$((ITERS * 10))
      r=$("$WORK/predict_bench" "$WORK/d.bin" 512 "$t" "$batch" "$iters" | awk '/^RESULT/ {print $2, $4}')
      CELL[pipec,$t,$batch]+="${r%% *} "
      CELL[pipec_cpu,$t,$batch]+="${r##* } "
      if [ "$HAVE_TORCH" = 1 ]; then
        r=$("$PYTHON" bench/serve/torch_infer.py --threads "$t" --batch "$batch" --iters "$iters" --precision "$TORCH_PRECISION" | awk '/^RESULT/ {print $2, $4}')
        CELL[torch,$t,$batch]+="${r%% *} "
        CELL[torch_cpu,$t,$batch]+="${r##* } "
      fi
    done
  done
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "Serving the chess net ($PRECISION; PyTorch $TORCH_PRECISION), $cpu, $(nproc) cores; median of $RUNS runs"
printf '%-8s %-8s %14s %12s %12s %12s\n' threads peer "1 example ms" "512 ms" "512 ex/s" "512 CPU ms"
for t in $THREADS; do
  for peer in pipec torch; do
    if [ "$peer" = torch ] && [ "$HAVE_TORCH" = 0 ]; then
      printf '%-8s %-8s %s\n' "$t" PyTorch "not measured: $PYTHON has no torch"
      continue
    fi
    one=$(echo ${CELL[$peer,$t,1]} | tr ' ' '\n' | median)
    big=$(echo ${CELL[$peer,$t,512]} | tr ' ' '\n' | median)
    bigcpu=$(echo ${CELL[${peer}_cpu,$t,512]} | tr ' ' '\n' | median)
    CELL[m,$peer,$t,1]=$one
    CELL[m,$peer,$t,512]=$big
    name=$peer
    [ "$peer" = torch ] && name=PyTorch
    printf '%-8s %-8s %14.3f %12.2f %12.0f %12.2f\n' "$t" "$name" "$one" "$big" "$(echo "512000 / $big" | bc -l)" "$bigcpu"
  done
  if [ "$HAVE_TORCH" = 1 ]; then
    printf '%-8s %-8s %13.2fx %11.2fx\n' "$t" "ratio" "$(echo "${CELL[m,torch,$t,1]} / ${CELL[m,pipec,$t,1]}" | bc -l)" \
      "$(echo "${CELL[m,torch,$t,512]} / ${CELL[m,pipec,$t,512]}" | bc -l)"
  fi
done
echo "ratio: PyTorch's time over pipec's (above 1: pipec is faster). pipec's times include the preprocessing from raw records."

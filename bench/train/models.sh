#!/usr/bin/env bash
# Seeds 003 and 004's nets (examples/deblur, examples/segmentation), the training step alone on random
# batches of the blocks' own sizes, in fp32 and in mixed_bf16, against PyTorch's eager step of the same
# layers in fp32 and under its CPU bf16 autocast, on the same threads, one table:
#
#   pipec     build/bench/train_step_time on a copy of the example with `precision` set to the row's
#             (the fast executor; mixed_bf16 on oneDNN's bf16 kernels where the CPU has bf16
#             instructions, else emulated on the f32 ones: the header line says which CPU)
#   PyTorch   bench/train/torch_models.py MODEL --precision fp32|bf16
#
#   bench/train/models.sh [STEPS]    # STEPS timed steps after 1 warm-up (default 2); RUNS runs (default 1),
#                                    # interleaved; MODELS (default "segmentation deblur"), THREADS (2)
#
# A cell is the median over runs of each run's median step; "vs PyTorch" is PyTorch's ms over pipec's
# for the same precision (bf16 autocast for mixed_bf16). Deblur is some 0.7 TFLOP a step: a run of it
# takes minutes on 2 cores.
set -euo pipefail
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
cd "$(dirname "$0")/../.."
STEPS=${1:-2}
RUNS=${RUNS:-1}
T=${THREADS:-2}
MODELS=${MODELS:-"segmentation deblur"}
PYTHON=${PYTHON:-/work/tfvenv/bin/python}
BUILD=${BUILD:-build}
[ -x "$BUILD/bench/train_step_time" ] || cmake --build "$BUILD" --target train_step_time >/dev/null
TMP=$(mktemp -d)
COPIES=()
trap 'rm -rf "$TMP" "${COPIES[@]}"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# examples/M/.M_P_bench.pipe: the example with its train block's precision set to P (.gitignore lists it).
spec_copy() {  # spec_copy MODEL PRECISION
  local out="examples/$1/.$1_$2_bench.pipe"
  awk -v p="$2" '
    /^train / { in_train = 1 }
    in_train && /^ *precision *=/ { next }
    in_train && /^}/ { print "  precision = " p; in_train = 0 }
    { print }' "examples/$1/$1.pipe" >"$out"
  grep -q "precision = $2" "$out" || { echo "bench: no $2 copy of examples/$1/$1.pipe" >&2; exit 1; }
  COPIES+=("$out")
  echo "$out"
}

HAVE_TORCH=0
"$PYTHON" -c "import torch" >/dev/null 2>&1 && HAVE_TORCH=1
for m in $MODELS; do
  for p in fp32 mixed_bf16; do spec_copy "$m" "$p" >/dev/null; done
done
for run in $(seq "$RUNS"); do
  for m in $MODELS; do
    for p in fp32 mixed_bf16; do
      "$BUILD/bench/train_step_time" "examples/$m/.${m}_${p}_bench.pipe" --threads "$T" --steps "$STEPS" --warmup 1 \
        >"$TMP/out" 2>"$TMP/err" || { echo "note: pipec $m $p failed: $(tail -3 "$TMP/err")" >&2; continue; }
      grep '^RESULT' "$TMP/out" | awk '{print $2, $4}' >>"$TMP/pipec_${m}_$p"
      grep -o 'fast (.*' "$TMP/out" | head -1 >"$TMP/executor_${m}_$p"
      if [ $HAVE_TORCH = 1 ]; then
        tp=$([ $p = fp32 ] && echo fp32 || echo bf16)
        "$PYTHON" bench/train/torch_models.py "$m" --threads "$T" --steps "$STEPS" --warmup 1 --precision "$tp" \
          >"$TMP/out" 2>"$TMP/err" || { echo "note: PyTorch $m $tp failed: $(tail -3 "$TMP/err")" >&2; continue; }
        grep '^RESULT' "$TMP/out" | awk '{print $2, $4}' >>"$TMP/torch_${m}_$p"
      fi
    done
  done
done

CPU_BF16=$(grep -qw avx512_bf16 /proc/cpuinfo && echo "AVX512_BF16" || echo "no bf16 instructions")
echo "training step alone, $T threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY, $STEPS steps after 1 warm-up x $RUNS runs;" \
  "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $CPU_BF16"
printf "%-14s %-11s %12s %12s %16s %16s %11s\n" "model" "precision" "pipec ms" "CPU ms" "PyTorch ms" "CPU ms" "vs PyTorch"
for m in $MODELS; do
  for p in fp32 mixed_bf16; do
    [ -s "$TMP/pipec_${m}_$p" ] || continue
    pm=$(cut -d' ' -f1 "$TMP/pipec_${m}_$p" | median); pc=$(cut -d' ' -f2 "$TMP/pipec_${m}_$p" | median)
    tm=0 tc=0
    if [ -s "$TMP/torch_${m}_$p" ]; then
      tm=$(cut -d' ' -f1 "$TMP/torch_${m}_$p" | median); tc=$(cut -d' ' -f2 "$TMP/torch_${m}_$p" | median)
    fi
    awk -v m="$m" -v p="$p" -v pm="$pm" -v pc="$pc" -v tm="$tm" -v tc="$tc" 'BEGIN {
      t = (tm > 0) ? sprintf("%.1f", tm) : "-"; c = (tc > 0) ? sprintf("%.1f", tc) : "-"
      r = (tm > 0) ? sprintf("%.2fx", tm / pm) : "-"
      printf "%-14s %-11s %12.1f %12.1f %16s %16s %11s\n", m, p, pm, pc, t, c, r }'
  done
done
for f in "$TMP"/executor_*; do
  [ -s "$f" ] && echo "  $(basename "$f" | sed 's/^executor_//'): $(cut -c1-220 "$f")"
done
[ $HAVE_TORCH = 1 ] || echo "note: PyTorch rows skipped: $PYTHON cannot import torch (set PYTHON=...)"

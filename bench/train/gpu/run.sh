#!/usr/bin/env bash
# GPU training against PyTorch on the same GPU, in one command (docs/performance.md, "Training on a GPU"):
# for each model and precision, `pipec run SPEC --device gpu` (its data pipeline feeding it) and PyTorch's
# whole training step (bench/train/torch_gpu.py: forward, loss, backward, Adam, fed from batches already
# on the device), steady state after warm-up, start-up reported apart. fp32 rows run with TF32 off on
# both sides; the `tf32` row allows it on both (`--allow-tf32`); mixed_bf16 runs against bf16 autocast.
# PIPEC_BENCH_COMPILE=1 adds torch.compile(mode="reduce-overhead"). Then, time allowing, where deblur's
# and segmentation's GPU steps go, node by node (bench/train/step_time.cpp --device gpu --nodes).
#
#   bash bench/train/gpu/run.sh       # results in $OUT (else out/train-gpu-bench): bench.txt, bench.log
#
# Binaries and NVIDIA's wheels are found as tests/gpu/run.sh finds them (tests/gpu/common.sh).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-${PIPEC_GPU_OUT:-out/train-gpu-bench}}
mkdir -p "$out"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pipec-train-bench.XXXXXX")
log=$out/bench.log
py=${PIPEC_PYTHON:-python3}
limit=${PIPEC_BENCH_TIME_LIMIT:-540}
start=$(date +%s)
source tests/gpu/common.sh

left() { echo $((limit - ($(date +%s) - start))); }

# The example's spec with its train block's precision set and without its validation (the evaluation
# after the last step runs on the CPU and is not what this times; tests/gpu/run.sh does the same).
with_precision() {
  local spec=$1 p=$2 o
  o=$(dirname "$spec")/.bench_$p.pipe
  if grep -q '^ *precision = ' "$spec"; then sed -E "s/^( *precision = )[a-z0-9_]+/\1$p/" "$spec"
  else sed -E "s/^( *loss = .*)$/\1\n  precision = $p/" "$spec"; fi | sed -e '/^ *validation = /d' -e '/^ *metrics = /d' >"$o"
  echo "$o"
}

# row MODEL SPEC PRECISION STEPS [tf32]: pipec and PyTorch, one table row.
row() {
  local model=$1 spec=$2 precision=$3 steps=$4 tf32=${5:-}
  if [ "$(left)" -lt 40 ]; then
    printf '%-14s %-11s %s\n' "$model" "$precision${tf32:+ tf32}" "not run: the time limit" >>"$scratch/table"
    return
  fi
  local s m=$scratch/$model-$precision$tf32.jsonl flags=()
  s=$(with_precision "$spec" "$precision")
  [ -n "$tf32" ] && flags+=(--allow-tf32)
  echo "== pipec $model $precision$tf32" | tee -a "$log"
  timeout -k 5 $(($(left) - 20)) "$pipec" run "$s" --steps "$steps" --device gpu "${flags[@]}" --metrics "$m" \
    --stats-json "$m.json" >>"$log" 2>&1
  local rc=$?
  rm -f "$s"
  local rate ms startup
  read -r _ rate ms startup _ < <("$py" bench/train/gpu/steady_rate.py "$m" 10)
  [ $rc != 0 ] && rate=- && ms="- (exit $rc)"
  local tp=bf16
  [ "$precision" = fp32 ] && tp=fp32
  local targs=(--precision $tp --steps 50 --warmup 10)
  [ -n "$tf32" ] && targs+=(--tf32)
  echo "== torch $model ${targs[*]}" | tee -a "$log"
  local eager compiled="-"
  eager=$(timeout -k 5 120 "$py" bench/train/torch_gpu.py "$model" "${targs[@]}" 2>>"$log" | tee -a "$log" | awk '/^RESULT/ { print $4 }')
  if [ "${PIPEC_BENCH_COMPILE:-}" = 1 ]; then
    compiled=$(timeout -k 5 240 "$py" bench/train/torch_gpu.py "$model" "${targs[@]}" --compile 2>>"$log" | tee -a "$log" |
      awk '/^RESULT/ { print $4 }')
  fi
  local ratio
  ratio=$(awk -v a="$rate" -v b="$eager" 'BEGIN { if (a == "-" || b == "" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }')
  printf '%-14s %-11s %12s %10s %10s %12s %12s %7s\n' "$model" "$precision${tf32:+ tf32}" "${rate:--}" "${ms:--}" \
    "${startup:--}" "${eager:--}" "${compiled:--}" "$ratio" >>"$scratch/table"
}

main() {
  find_binaries || exit 2
  local wheels
  wheels=$(wheel_library_dirs)
  [ -n "$wheels" ] && export PIPEC_CUDA_LIBRARY_PATH="${PIPEC_CUDA_LIBRARY_PATH:+$PIPEC_CUDA_LIBRARY_PATH:}$wheels"
  export PIPEC_CACHE_DIR=${PIPEC_CACHE_DIR:-$scratch/cache}
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(nproc) cores"
    "$pipec" --version
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1
    "$py" -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1
  } | tee "$out/versions.txt"
  for ex in chess deblur segmentation; do
    [ -f "examples/$ex/make_data.pipe" ] || continue
    case $ex in
      chess) probe='examples/chess/data/chess-*.tfrecord' ;;
      deblur) probe='examples/deblur/data/sharp/*.jpg' ;;
      segmentation) probe='examples/segmentation/data/camvid/image/*.png' ;;
    esac
    compgen -G "$probe" >/dev/null || timeout 120 "$pipec" run "examples/$ex/make_data.pipe" -q >>"$log" 2>&1
  done
  : >"$scratch/table"
  row chess examples/chess/chess.pipe fp32 300
  row chess examples/chess/chess.pipe mixed_bf16 300
  row chess examples/chess/chess.pipe fp32 300 tf32
  row deblur examples/deblur/deblur.pipe fp32 40
  row deblur examples/deblur/deblur.pipe mixed_bf16 40
  row segmentation examples/segmentation/segmentation.pipe fp32 40
  row segmentation examples/segmentation/segmentation.pipe mixed_bf16 40
  {
    echo "GPU training, pipec --device gpu against PyTorch on the same GPU ($(head -3 "$out/versions.txt" | tail -1))"
    echo "pipec: steady examples/s from step 10 to the last (its input pipeline feeding it); torch: preloaded"
    echo "device batches, eager (and compiled with PIPEC_BENCH_COMPILE=1); ratio = pipec / eager"
    printf '%-14s %-11s %12s %10s %10s %12s %12s %7s\n' model precision "pipec ex/s" "ms/step" "start s" "torch eager" \
      "torch comp." ratio
    cat "$scratch/table"
  } | tee "$out/bench.txt"
  # Where the GPU step's time goes, node by node, for the nets that trail PyTorch (bench/train/step_time.cpp
  # --device gpu --nodes: random batches, the device waited for after each node): the largest rows.
  local spec
  for spec in examples/deblur/deblur.pipe examples/segmentation/segmentation.pipe; do
    [ -x "${step_time:-}" ] || { echo "(no train_step_time beside pipec: no per-node breakdown)" | tee -a "$out/bench.txt"; break; }
    [ "$(left)" -lt 40 ] && { echo "(per-node breakdown of $spec: not run, the time limit)" | tee -a "$out/bench.txt"; continue; }
    {
      echo
      echo "where the step goes: train_step_time $spec --device gpu --nodes --steps 3 --warmup 1"
      timeout -k 5 $(($(left) - 10)) "$step_time" "$spec" --device gpu --nodes --steps 3 --warmup 1 2>&1 | head -24
    } | tee -a "$out/bench.txt"
  done
  rm -rf "$scratch"
}

main "$@"

#!/usr/bin/env bash
# Image pipeline benchmarks (seeds 003 and 004): throughput of pipec and of its peers on the same files,
# in one run, printed as a table.
#
#   bench/images/run.sh [EPOCHS]     # default 5 epochs over the files per measured run (seed 003 timed
#                                    # 5 epochs), median of RUNS (3)
#   ONLY=004 bench/images/run.sh     # seed 004's rows only (ONLY=003: seed 003's)
#
# Seed 003 (pairs of 1280x720 JPEGs; decode, one 256x256 window for both, flip, normalize), pairs/s over
# all epochs of a run:
#   pipec                 bench/images/deblur_bench.pipe: crop pushdown (a cropping decode) and, as its
#                         repeat runs the decode 5 times, the JPEG window index (repeated_jpeg_index)
#   pipec first epoch     the same, first epoch only (--take PAIRS): the epoch that builds the index
#   pipec no index        --disable-pass=repeated_jpeg_index: every epoch a cropping decode
#   pipec no pushdown     --disable-pass=crop_pushdown: full decode, then crop
#   tf.data seed          seed 003's code without its cache() (decode, normalize whole images, stacked
#                         random_crop, flip): every epoch decodes
#   tf.data seed+cache    seed 003's code as its article has it: decoded images cache()d in memory
#   tf.data decode_crop   extract_jpeg_shape + decode_and_crop_jpeg (the best tf.data version without a cache)
#   decoder alone         libjpeg-turbo decoding both whole images from memory, nothing else (2 threads)
# then, per image on one thread in CPU time (jpeg_index_cost): full decode, cropping decode, the
# first epoch with the index, a later epoch's window from it.
# Seed 004 (960x720 PNG photo + label; crop_or_pad 512, f32, one-hot of 32 colours), samples/s:
#   pipec                 bench/images/seg_bench.pipe
#   tf.data seed          seed 004's preprocess_fn
#   decoder alone         libpng decoding both PNGs from memory
set -euo pipefail
cd "$(dirname "$0")/../.."
EPOCHS=${1:-5}
RUNS=${RUNS:-3}
PIPEC=${PIPEC:-build/pipec}
PY=${PYTHON:-python3}
D=bench/images/data

[ -x "$PIPEC" ] || bash scripts/build.sh --target pipec >/dev/null
[ -d $D/deblur/sharp ] || { echo "making $D/deblur ..." >&2; "$PIPEC" run bench/images/make_deblur_data.pipe --quiet; }
[ -d $D/seg/image ] || { echo "making $D/seg ..." >&2; "$PIPEC" run bench/images/make_seg_data.pipe --quiet; }
ONLY=${ONLY:-}
# decode_alone links the runtime's decoders: rebuilt when they change.
if [ ! -x build/bench/decode_alone ] || [ bench/images/decode_alone.cpp -nt build/bench/decode_alone ] ||
  [ build/runtime/libpipec_runtime.a -nt build/bench/decode_alone ]; then
  mkdir -p build/bench
  g++ -std=c++20 -O2 -DNDEBUG -I. bench/images/decode_alone.cpp build/runtime/libpipec_runtime.a -lfmt -ljpeg -lpng -lz \
    -lpthread -o build/bench/decode_alone
fi

if [ ! -x build/bench/jpeg_index_cost ] || [ bench/images/jpeg_index_cost.cpp -nt build/bench/jpeg_index_cost ] ||
  [ build/runtime/libpipec_runtime.a -nt build/bench/jpeg_index_cost ]; then
  mkdir -p build/bench
  g++ -std=c++20 -O2 -DNDEBUG -I. bench/images/jpeg_index_cost.cpp build/runtime/libpipec_runtime.a -lfmt -ljpeg -lpng -lz \
    -lpthread -o build/bench/jpeg_index_cost
fi

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
pairs=$(ls $D/deblur/sharp/*.jpg | wc -l)
samples=$(ls $D/seg/image/*.png | wc -l)

# pipec: elements/s from --stats-json (the specs repeat EPOCHS times; --take bounds the run).
pipec_rate() {
  local spec=$1 take=$2; shift 2
  local tmp; tmp=$(mktemp)
  "$PIPEC" run "$spec" --pipeline train --quiet --threads 2 --take "$take" --stats-json "$tmp" "$@" >/dev/null
  $PY -c "import json; print(json.load(open('$tmp'))['examples_per_second'])"
  rm -f "$tmp"
}

declare -A rate
if [ "$ONLY" != 004 ]; then
rate[pipec]=$(for i in $(seq "$RUNS"); do pipec_rate bench/images/deblur_bench.pipe $((pairs * EPOCHS)); done | median)
rate[pipec_first_epoch]=$(for i in $(seq "$RUNS"); do pipec_rate bench/images/deblur_bench.pipe "$pairs"; done | median)
rate[pipec_no_index]=$(for i in $(seq "$RUNS"); do pipec_rate bench/images/deblur_bench.pipe $((pairs * EPOCHS)) --disable-pass=repeated_jpeg_index; done | median)
rate[pipec_no_pushdown]=$(for i in $(seq "$RUNS"); do pipec_rate bench/images/deblur_bench.pipe $((pairs * EPOCHS)) --disable-pass=crop_pushdown; done | median)
# Both images of a pair: pairs/s = images/s / 2.
rate[decoder_alone]=$(for i in $(seq "$RUNS"); do build/bench/decode_alone "$D/deblur/*/*.jpg" --threads 2 --rounds "$EPOCHS" 2>/dev/null; done | median)
rate[decoder_alone]=$($PY -c "print(${rate[decoder_alone]} / 2)")
fi
if $PY -c "import tensorflow" 2>/dev/null; then
  if [ "$ONLY" != 004 ]; then
    for m in deblur_seed deblur_cache deblur_crop; do
      rate[$m]=$(for i in $(seq "$RUNS"); do $PY bench/images/tfdata_peer.py $m $D/deblur "$EPOCHS"; done | median)
    done
  fi
  [ "$ONLY" = 003 ] || rate[seg_tfdata]=$(for i in $(seq "$RUNS"); do $PY bench/images/tfdata_peer.py seg_seed $D/seg "$EPOCHS"; done | median)
else
  echo "tensorflow is not installed: skipping the tf.data peers (set PYTHON to a python with tensorflow)" >&2
fi
if [ "$ONLY" != 003 ]; then
  # pipec and the decoder alone run by turns, so both see the same machine load.
  seg_p=() seg_d=()
  for i in $(seq "$RUNS"); do
    seg_p+=("$(pipec_rate bench/images/seg_bench.pipe $((samples * EPOCHS / 3)) -D "EPOCHS=$EPOCHS")")
    seg_d+=("$(build/bench/decode_alone "$D/seg/*/*.png" --threads 2 --rounds "$EPOCHS" 2>/dev/null)")
  done
  rate[seg_pipec]=$(printf '%s\n' "${seg_p[@]}" | median)
  # Both PNGs of a sample: samples/s = images/s / 2.
  rate[seg_decoder_alone]=$($PY -c "print($(printf '%s\n' "${seg_d[@]}" | median) / 2)")
fi

row() {  # name, rate, reference name
  local v=${rate[$2]:-}
  [ -n "$v" ] || return 0
  printf '%-34s %10.1f %14.2f\n' "$1" "$v" "$($PY -c "print(${rate[$3]} / $v)")"
}
if [ "$ONLY" != 004 ]; then
printf '\nseed 003: %s pairs of 1280x720 JPEGs x %s epochs, median of %s runs, %s cores\n' "$pairs" "$EPOCHS" "$RUNS" "$(nproc)"
printf '%-34s %10s %14s\n' "pipeline" "pairs/s" "pipec / it"
row "pipec (pushdown + index)" pipec pipec
row "pipec, first epoch only" pipec_first_epoch pipec
row "pipec, no index" pipec_no_index pipec
row "pipec, no pushdown" pipec_no_pushdown pipec
row "tf.data, seed 003's code" deblur_seed pipec
row "tf.data, seed 003's code + cache()" deblur_cache pipec
row "tf.data, decode_and_crop_jpeg" deblur_crop pipec
row "decoder alone (whole images)" decoder_alone pipec
fi
if [ "$ONLY" != 003 ]; then
printf '\nseed 004: %s pairs of 960x720 PNGs x %s epochs, batches of 3\n' "$samples" "$EPOCHS"
printf '%-34s %10s %14s\n' "pipeline" "samples/s" "pipec / it"
row "pipec" seg_pipec seg_pipec
row "tf.data, seed 004's code" seg_tfdata seg_pipec
row "decoder alone (both PNGs)" seg_decoder_alone seg_pipec
fi
[ "$ONLY" = 004 ] && exit 0
printf '\nseed 003, per image: the JPEG window index (build/bench/jpeg_index_cost)\n'
build/bench/jpeg_index_cost "$D/deblur/*/*.jpg" --rounds "$RUNS"

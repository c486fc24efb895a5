#!/usr/bin/env bash
# Before/after: two pipec binaries on the same specs and files, interleaved run by run in one table, so
# that a change's speed is compared under the same machine load (the regression check of a refactor).
#
#   bench/ab/run.sh BEFORE_PIPEC AFTER_PIPEC [SPEC:TAKE ...]   # RUNS=5 by default
#
# Default specs: the chess pipeline (4000 batches), and the image benchmarks' deblur and segmentation
# pipelines (bench/images). Each cell is the median over RUNS runs; a run is `pipec run SPEC --pipeline
# $PIPELINE --take TAKE --quiet --device cpu` with its examples/s from --stats-json and its user + system CPU time. Columns:
#   examples/s     wall clock (first request to last batch), median
#   CPU-s/1M       CPU seconds of the whole process per million examples: on a loaded machine the figure
#                  to compare, since wall time counts the time other processes held the cores
#   after/before   the after binary's examples/s over the before binary's (above 1: faster), and the same
#                  for CPU time (below 1: cheaper)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { sed -n 2,14p "$0" >&2; exit 2; }
BEFORE=$1 AFTER=$2
shift 2
SPECS=("$@")
[ ${#SPECS[@]} -gt 0 ] || SPECS=(examples/chess/chess.pipe:4000 bench/images/deblur_bench.pipe:400 bench/images/seg_bench.pipe:100)
RUNS=${RUNS:-5}
PIPELINE=${PIPELINE:-train}  # every default spec names its pipeline `train` (and chess.pipe has a train block too)
for bin in "$BEFORE" "$AFTER"; do [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }; done
ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1 || "$AFTER" run examples/chess/make_data.pipe --quiet
[ -d bench/images/data/deblur/sharp ] || "$AFTER" run bench/images/make_deblur_data.pipe --quiet
[ -d bench/images/data/seg/image ] || "$AFTER" run bench/images/make_seg_data.pipe --quiet

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
one_run() {  # one_run BIN SPEC TAKE OUTFILE: appends "examples/s CPU-s-per-1M"
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$1" run "$2" --pipeline "$PIPELINE" --take "$3" --quiet --device cpu --stats-json "$TMP/s.json" \
    >/dev/null 2>"$TMP/err" || { echo "failed: $1 run $2: $(tail -2 "$TMP/err")" >&2; exit 1; }
  python3 -c "import json; s = json.load(open('$TMP/s.json')); u, k = open('$TMP/time').read().split()[:2]; \
print(s['examples_per_second'], (float(u) + float(k)) / s['examples'] * 1e6)" >>"$4"
}
for r in $(seq "$RUNS"); do
  for s in "${SPECS[@]}"; do
    spec=${s%:*} take=${s##*:} key=$(echo "$spec" | tr '/.' '__')
    # Alternate which binary goes first, so neither always runs on a warmer page cache.
    if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
    for which in $order; do
      bin=$BEFORE; [ $which = after ] && bin=$AFTER
      one_run "$bin" "$spec" "$take" "$TMP/$key.$which"
    done
  done
done
echo "bench/ab: median of $RUNS interleaved runs; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "before: $BEFORE"
echo "after:  $AFTER"
echo
printf "%-34s %14s %14s %10s %10s %9s %9s\n" spec "before ex/s" "after ex/s" "before CPU" "after CPU" "after/bef" "CPU a/b"
for s in "${SPECS[@]}"; do
  spec=${s%:*} key=$(echo "$spec" | tr '/.' '__')
  rb=$(cut -d' ' -f1 "$TMP/$key.before" | median); ra=$(cut -d' ' -f1 "$TMP/$key.after" | median)
  cb=$(cut -d' ' -f2 "$TMP/$key.before" | median); ca=$(cut -d' ' -f2 "$TMP/$key.after" | median)
  awk -v s="$spec" -v rb="$rb" -v ra="$ra" -v cb="$cb" -v ca="$ca" \
    'BEGIN { printf "%-34s %14.0f %14.0f %10.3f %10.3f %8.3fx %8.3fx\n", s, rb, ra, cb, ca, ra / rb, ca / cb }'
done

#!/usr/bin/env bash
# bench/python: examples/s delivered to Python as torch tensors, same files, same run, one table.
#
#   bench/python/run.sh [BATCHES]     # default 400 chess batches of 512 (deblur: BATCHES/10 of 16); RUNS=3
#
# Each row is the median of RUNS runs (the two chess pipec rows: of 3 * RUNS), interleaved. The pipec rows
# count as `pipec run --stats-json` does (first request to last batch, warm-up included); the peers are
# timed after a warm-up, their start-up excluded.
#
# Chess (seed 002, examples/chess/data): `pipec run` itself, `import pipec` (+ torch.from_dlpack), a torch
# DataLoader over the same TFRecords read in Python with the seed's numpy unpacking (per record, and per
# batch), with WORKERS (default: 0, 1 and 2) workers, and tf.data's vectorized version through
# tf.experimental.dlpack. Seed 003 (bench/images/data/deblur): `pipec run bench/python/deblur.pipe`,
# `import pipec`, and torchvision + DataLoader. Rows whose Python packages are missing are skipped with
# a note. PYTHON (default /work/tfvenv/bin/python, else python3) needs numpy and torch; the module is
# build/python (scripts/build.sh builds it).
set -euo pipefail
cd "$(dirname "$0")/../.."
BATCHES=${1:-400}
DEBLUR_BATCHES=$(( BATCHES / 10 > 5 ? BATCHES / 10 : 5 ))
RUNS=${RUNS:-3}
PIPEC=${PIPEC:-build/pipec}
PY=${PYTHON:-/work/tfvenv/bin/python}
[ -x "$PY" ] || PY=python3
WORKERS=${WORKERS:-"0 1 2"}
[ -x "$PIPEC" ] && ls build/python/pipec/_pipec*.so >/dev/null 2>&1 || bash scripts/build.sh pipec _pipec >/dev/null
ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1 || "$PIPEC" run examples/chess/make_data.pipe --quiet
[ -d bench/images/data/deblur/sharp ] || "$PIPEC" run bench/images/make_deblur_data.pipe --quiet

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
has() { "$PY" -c "import $1" 2>/dev/null; }

# row NAME CMD...: appends the last line of CMD's stdout (examples/s) to $TMP/NAME.
row() {
  local name=$1; shift
  "$@" >"$TMP/out" 2>"$TMP/err" || { echo "note: $name failed: $(tail -2 "$TMP/err")" >&2; return 0; }
  tail -1 "$TMP/out" >>"$TMP/$name"
}
pipec_run() {  # pipec_run NAME SPEC TAKE [FLAGS]: `pipec run`'s examples/s from --stats-json
  local name=$1 spec=$2 take=$3
  shift 3
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$PIPEC" run "$spec" --take "$take" --quiet --device cpu \
    --stats-json "$TMP/stats.json" "$@" 2>"$TMP/err" || { echo "note: $name failed: $(tail -2 "$TMP/err")" >&2; return 0; }
  "$PY" -c "import json; s = json.load(open('$TMP/stats.json')); u, k = open('$TMP/time').read().split()[:2]; \
print(s['examples_per_second'], (float(u) + float(k)) / s['examples'] * 1e6)" >>"$TMP/$name"
}

has torch || { echo "bench/python needs torch for $PY" >&2; exit 1; }
for i in $(seq "$RUNS"); do
  # The two pipec rows take a second each and vary most with the machine's load: 3 pairs per run.
  for j in 1 2 3; do
    pipec_run chess_pipec_run examples/chess/chess.pipe $((BATCHES + 20))
    row chess_import_pipec "$PY" bench/python/chess_peers.py pipec --batches "$BATCHES" --warmup 20
  done
  for w in $WORKERS; do
    row "chess_dataloader_w$w" "$PY" bench/python/chess_peers.py dataloader --batches $((BATCHES / 8)) --warmup 4 --workers "$w"
    row "chess_dataloader_vec_w$w" "$PY" bench/python/chess_peers.py dataloader_vec --batches $((BATCHES / 2)) --warmup 10 --workers "$w"
  done
  has tensorflow && row chess_tfdata "$PY" bench/python/chess_peers.py tfdata --batches "$BATCHES" --warmup 20
  pipec_run deblur_pipec_run bench/python/deblur.pipe $((DEBLUR_BATCHES + 3)) --pipeline train
  row deblur_import_pipec "$PY" bench/python/deblur_peers.py pipec --batches "$DEBLUR_BATCHES" --warmup 3
  if has torchvision; then
    for w in $WORKERS; do
      row "deblur_torchvision_w$w" "$PY" bench/python/deblur_peers.py torchvision --batches "$DEBLUR_BATCHES" --warmup 3 --workers "$w"
    done
  fi
done
has tensorflow || echo "note: no TensorFlow for $PY: tf.data row skipped" >&2
has torchvision || echo "note: no torchvision for $PY: its rows skipped" >&2

get() { [ -s "$TMP/$1" ] && awk '{print $1}' "$TMP/$1" | median || echo ""; }
getcpu() { [ -s "$TMP/$1" ] && awk 'NF > 1 {print $2}' "$TMP/$1" | median || echo ""; }
printf '\nbench/python: %s chess batches of 512 and %s deblur batches of 16 per run, median of %s runs;\n' \
  "$BATCHES" "$DEBLUR_BATCHES" "$RUNS"
printf '%s cores (%s), load average %s\n\n' "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %14s %15s %16s\n' "pipeline" "examples/s" "import pipec /" "CPU-s / 1M ex"
for seed in chess deblur; do
  ref=$(get ${seed}_import_pipec)
  for f in $(ls "$TMP" | grep -E "^${seed}_[a-z0-9_]+$" | sort); do
    rate=$(get "$f")
    "$PY" -c "import sys; r, ref, cpu = float(sys.argv[2]), float(sys.argv[3] or 'nan'), sys.argv[4]
print(f'{sys.argv[1]:<28} {r:14.1f} {ref / r:14.2f}x {float(cpu):16.2f}' if cpu else f'{sys.argv[1]:<28} {r:14.1f} {ref / r:14.2f}x {\"\":>16}')" \
      "$f" "$rate" "$ref" "$(getcpu "$f")"
  done
done

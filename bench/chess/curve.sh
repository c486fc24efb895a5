#!/usr/bin/env bash
# Chess's input path across thread counts, side by side with the hand-written loop: for T = 1, 2, 4, ...
# up to the machine's cores, `pipec run examples/chess/chess.pipe --take BATCHES --threads T` and
# bench/chess/handwritten.cpp with T threads, interleaved, ROUNDS rounds; then pipec with no --threads
# (its own choice). One table: examples/s and CPU-s per 1M examples (user + system time of the whole
# process, start-up included), medians over the rounds, and pipec's ratio to the loop in each.
#
#   bash bench/chess/curve.sh [BATCHES]       # default 6000 batches of 512 per run, ROUNDS=3
#
# Binaries: $PIPEC and $HANDWRITTEN when set; else the bundle's (dist/pipec-bundle from
# scripts/bundle.sh: pipec and chess_handwritten_v3/_v4, the loop built for AVX2 and AVX-512, the one this
# CPU runs taken); else build/pipec and build/bench/chess_handwritten, built when missing.
# Needs only bash, python3 and coreutils: it runs on a GPU machine with the bundle.
set -euo pipefail
cd "$(dirname "$0")/../.."
BATCHES=${1:-6000}
ROUNDS=${ROUNDS:-3}
if [ -z "${PIPEC:-}" ] && [ ! -x dist/pipec-bundle/pipec ] && [ -f dist/pipec-bundle.tar.xz ]; then
  tar -xJf dist/pipec-bundle.tar.xz -C dist
fi
if [ -z "${PIPEC:-}" ]; then
  if [ -x dist/pipec-bundle/pipec ]; then
    PIPEC=dist/pipec-bundle/pipec
    export LD_LIBRARY_PATH="$(pwd)/dist/pipec-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PIPEC_STDLIB=${PIPEC_STDLIB:-$(pwd)/dist/pipec-bundle/stdlib}
  else
    PIPEC=build/pipec
  fi
fi
if [ -z "${HANDWRITTEN:-}" ]; then
  if [ -x dist/pipec-bundle/chess_handwritten_v3 ]; then
    HANDWRITTEN=dist/pipec-bundle/chess_handwritten_v3
    grep -qw avx512bw /proc/cpuinfo && HANDWRITTEN=dist/pipec-bundle/chess_handwritten_v4
  else
    HANDWRITTEN=build/bench/chess_handwritten
    [ -x "$PIPEC" ] || bash scripts/build.sh --target pipec >/dev/null
    bash bench/chess/build_handwritten.sh
  fi
fi
for b in "$PIPEC" "$HANDWRITTEN"; do
  [ -x "$b" ] || { echo "curve.sh: $b is missing (scripts/bundle.sh makes the bundle's)" >&2; exit 1; }
done
DATA=examples/chess/data
ls $DATA/chess-*.tfrecord >/dev/null 2>&1 || "$PIPEC" run examples/chess/make_data.pipe --quiet

cores=$(nproc)
threads=()
for ((t = 1; t < cores; t *= 2)); do threads+=("$t"); done
threads+=("$cores")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TIMEFORMAT="%U %S"

# timed NAME CMD...: runs CMD; its CPU seconds go to $TMP/NAME.cpu, its stdout to $TMP/out.
timed() {
  local name=$1; shift
  { time "$@" >"$TMP/out" 2>"$TMP/err"; } 2>"$TMP/time" || { echo "curve.sh: $name failed: $(tail -3 "$TMP/err")" >&2; exit 1; }
  awk '{ print $1 + $2 }' "$TMP/time" >>"$TMP/$name.cpu"
}
pipec_run() {  # pipec_run NAME [--threads T]
  local name=$1; shift
  timed "$name" "$PIPEC" run examples/chess/chess.pipe --take "$BATCHES" --quiet --stats-json "$TMP/stats.json" "$@"
  python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['examples_per_second'])" "$TMP/stats.json" >>"$TMP/$name.rate"
}
for ((r = 0; r < ROUNDS; ++r)); do
  for t in "${threads[@]}"; do
    pipec_run "pipec_$t" --threads "$t"
    timed "loop_$t" "$HANDWRITTEN" "$DATA" "$BATCHES" --threads "$t"
    awk '{ print $1 }' "$TMP/out" | tail -1 >>"$TMP/loop_$t.rate"
  done
  pipec_run pipec_default
done

median() { sort -g "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '\nchess input path: %s batches of 512 per run, median of %s rounds; %s cores (%s), load average %s\n' \
  "$BATCHES" "$ROUNDS" "$cores" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'pipec: %s; loop: %s\n\n' "$PIPEC" "$HANDWRITTEN"
printf '%-9s %14s %14s %8s %14s %14s %8s\n' threads "pipec ex/s" "loop ex/s" ratio "pipec CPU-s/1M" "loop CPU-s/1M" ratio
per_m() { awk -v s="$1" -v n="$BATCHES" 'BEGIN { printf "%.3f", s / (n * 512 / 1e6) }'; }
best=0
for t in "${threads[@]}"; do
  pr=$(median "$TMP/pipec_$t.rate"); lr=$(median "$TMP/loop_$t.rate")
  pc=$(per_m "$(median "$TMP/pipec_$t.cpu")"); lc=$(per_m "$(median "$TMP/loop_$t.cpu")")
  best=$(awk -v a="$best" -v b="$pr" 'BEGIN { print (b > a ? b : a) }')
  awk -v t="$t" -v pr="$pr" -v lr="$lr" -v pc="$pc" -v lc="$lc" \
    'BEGIN { printf "%-9s %14.0f %14.0f %8.2f %14.3f %14.3f %8.2f\n", t, pr, lr, pr / lr, pc, lc, pc / lc }'
done
dr=$(median "$TMP/pipec_default.rate"); dc=$(per_m "$(median "$TMP/pipec_default.cpu")")
awk -v dr="$dr" -v dc="$dc" -v best="$best" \
  'BEGIN { printf "%-9s %14.0f %14s %8s %14.3f\n\npipec with no --threads: %.2f of its best --threads\n", "default", dr, "-", "-", dc, dr / best }'

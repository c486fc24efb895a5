#!/usr/bin/env bash
# Training benchmark: the chess train block (examples/chess/chess.pipe, batch 512) on the executors
# pipec has, one table: examples/s and seconds per step (wall clock of the training loop), CPU-seconds
# per step (user + system of the whole process, start-up and pipeline included), and the
# share of each phase (input wait, forward, loss, backward, optimizer) from `pipec run --stats-json`.
# The reference executor is the only one yet (plain loops, one thread: the oracle, not a fast path);
# the table is where a faster executor will show its gain on the same steps.
#
#   bench/train/run.sh [STEPS]        # default 3 steps per run, median of RUNS=3 runs
set -euo pipefail
cd "$(dirname "$0")/../.."
STEPS=${1:-3}
RUNS=${RUNS:-3}
PIPEC=${PIPEC:-build/pipec}
SPEC=${SPEC:-examples/chess/chess.pipe}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[ -x "$PIPEC" ] || bash scripts/build.sh --target pipec >/dev/null
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data in examples/chess/data ..." >&2
  "$PIPEC" run examples/chess/make_data.pipe --quiet
fi

# run NAME FLAGS...: one training run; appends "stats.json wall user system" to $TMP/NAME.runs
run() {
  local name=$1; shift
  local json="$TMP/$name.$(date +%s%N).json"
  /usr/bin/time -f "%e %U %S" -o "$TMP/time" "$PIPEC" run "$SPEC" --steps "$STEPS" --quiet --stats-json "$json" "$@" 2>"$TMP/err" ||
    { echo "note: $name failed: $(tail -3 "$TMP/err")" >&2; return 0; }
  echo "$json $(cat "$TMP/time")" >>"$TMP/$name.runs"
}

for i in $(seq "$RUNS"); do
  run reference
done

python3 - "$TMP" "$STEPS" <<'PY'
import json, statistics, sys, pathlib
tmp, steps = pathlib.Path(sys.argv[1]), int(sys.argv[2])
print(f"| executor | steps | examples/s | s/step | CPU-s/step | input wait | forward | loss | backward | optimizer |")
print(f"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for runs in sorted(tmp.glob("*.runs")):
    rows = [line.split() for line in runs.read_text().splitlines() if line.strip()]
    stats = [(json.load(open(r[0])), float(r[2]) + float(r[3])) for r in rows]
    best, cpu = sorted(stats, key=lambda s: s[0]["seconds"])[len(stats) // 2]  # the median run by wall clock
    total = best["seconds"]
    share = lambda k: f"{100 * best[k] / total:.1f}%"
    print(f"| {runs.stem} | {best['steps']} | {best['examples_per_second']:,.0f} | {total / best['steps']:.2f} | {cpu / best['steps']:.2f} | "
          f"{share('input_wait_seconds')} | {share('forward_seconds')} | {share('loss_seconds')} | {share('backward_seconds')} | "
          f"{share('optimizer_seconds')} |")
PY

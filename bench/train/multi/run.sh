#!/usr/bin/env bash
# Data-parallel training across processes on one machine: the chess net (examples/chess/chess.pipe in
# fp32, batch 512), STEPS steps, side by side in one run:
#
#   1 process    `pipec run SPEC --steps STEPS --threads 1` (strategy single)
#   2 ranks      `mpirun -np 2 pipec run SPEC_MW --steps STEPS --threads 1`: strategy multi_worker(),
#                each rank a replica on its shard of the data with 256 of each batch of 512, gradients
#                all-reduced over Open MPI in rank order
#
#   bench/train/multi/run.sh [STEPS]     # default 40 steps; RUNS runs (default 3), interleaved
#
# Columns: wall seconds, CPU seconds (user + system of the whole process tree: on a machine shared with
# others this is the comparable figure), examples per CPU-second (the global batch of every step), and
# the efficiency: the 2 ranks' examples per CPU-second over the one process's (1.0: no cost for the
# split and the all-reduce), and for the 2 ranks the all-reduce's share of rank 0's run: in all, and the
# part the step waited for after its backward pass (what overlapping the buckets did not hide). Medians
# over the runs.
set -euo pipefail
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
cd "$(dirname "$0")/../../.."
STEPS=${1:-40}
RUNS=${RUNS:-3}
BUILD=${BUILD:-build}
PIPEC=${PIPEC:-$BUILD/pipec}
command -v mpirun >/dev/null || { echo "bench: mpirun not found (scripts/setup.sh installs Open MPI)" >&2; exit 2; }
[ -x "$PIPEC" ] || cmake --build "$BUILD" --target pipec pipec_mpi >/dev/null
if ! ls examples/chess/data/chess-*.tfrecord >/dev/null 2>&1; then
  echo "making sample data in examples/chess/data ..." >&2
  "$PIPEC" run examples/chess/make_data.pipe --quiet
fi
SPEC=examples/chess/.chess_fp32_single.pipe
SPEC_MW=examples/chess/.chess_fp32_multi.pipe
trap 'rm -f "$SPEC" "$SPEC_MW"; rm -rf "$TMP"' EXIT
TMP=$(mktemp -d)
# fp32, no validation (evaluating the held-out positions is no step's time); the multi_worker copy adds
# the strategy.
sed -e 's/precision = mixed_bf16/precision = fp32/' -e '/^ *validation = /d' -e '/^ *metrics = /d' \
  examples/chess/chess.pipe >"$SPEC"
sed -e 's/strategy = mirrored(devices = all)/strategy = multi_worker()/' "$SPEC" >"$SPEC_MW"
grep -q 'strategy = multi_worker()' "$SPEC_MW" || { echo "bench: could not make the multi_worker copy" >&2; exit 1; }

# measure ROW COMMAND...: appends "wall cpu" (the command's wall seconds and its process tree's CPU).
measure() {
  local row=$1
  shift
  python3 - "$@" >>"$TMP/$row" <<'PY'
import resource, subprocess, sys, time
start = time.time()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.time() - start
if p.returncode:
    sys.exit("bench: " + " ".join(sys.argv[1:]) + " failed:\n" + p.stderr[-2000:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.3f} {r.ru_utime + r.ru_stime:.3f}")
PY
}
for ((r = 0; r < RUNS; ++r)); do
  measure one "$PIPEC" run "$SPEC" --steps "$STEPS" --threads 1 --quiet
  measure two mpirun --oversubscribe -np 2 "$PIPEC" run "$SPEC_MW" --steps "$STEPS" --threads 1 --quiet \
    --stats-json "$TMP/two.json"
  # The share of rank 0's run spent waiting for all-reduces after the backward pass (its summary's figure).
  python3 - "$TMP/two.json" >>"$TMP/exposed" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
m = re.search(r"all-reduce ([0-9.]+) s, ([0-9.]+) s of it after the backward pass", s["executor"])
print(f"{100 * float(m.group(2)) / s['seconds']:.1f} {100 * float(m.group(1)) / s['seconds']:.1f}")
PY
done
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cpu_name=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "chess net, fp32, batch 512, $STEPS steps, median of $RUNS interleaved runs; $(nproc) cores: $cpu_name"
echo
echo "| run | wall s | CPU s | examples / CPU-s | efficiency | all-reduce, % of the run (after backward) |"
echo "| --- | --- | --- | --- | --- | --- |"
one_rate=
for row in one two; do
  wall=$(cut -d' ' -f1 "$TMP/$row" | median)
  cpu=$(cut -d' ' -f2 "$TMP/$row" | median)
  rate=$(awk -v s="$STEPS" -v c="$cpu" 'BEGIN {printf "%.0f", s * 512 / c}')
  [ -z "$one_rate" ] && one_rate=$rate
  eff=$(awk -v a="$rate" -v b="$one_rate" 'BEGIN {printf "%.2f", a / b}')
  name=$([ "$row" = one ] && echo "1 process x 1 thread" || echo "2 ranks x 1 thread (mpirun)")
  share="-"
  [ "$row" = two ] && share="$(cut -d' ' -f2 "$TMP/exposed" | median) ($(cut -d' ' -f1 "$TMP/exposed" | median))"
  echo "| $name | $wall | $cpu | $rate | $eff | $share |"
done

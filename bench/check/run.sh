#!/usr/bin/env bash
# How long `pipec check` takes on each example spec (parse, imports, names, types; nothing runs): the
# latency a user waits for at the command line, and a bound on the language server's re-check per edit.
#
#   bench/check/run.sh [RUNS]        # default 10 runs per spec: median, min and max wall time in ms,
#                                    # and the median CPU time (user + system), which load barely moves
#
# Uses hyperfine when it is installed (apt-get install hyperfine), otherwise a shell loop timed with
# `date +%s%N`. PIPEC=path/to/pipec picks the binary (default build/pipec, built when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-10}
PIPEC=${PIPEC:-build/pipec}
[ -x "$PIPEC" ] || bash scripts/build.sh --target pipec >/dev/null

specs=(examples/*/*.pipe)
tool=loop
command -v hyperfine >/dev/null && tool=hyperfine

# Prints "median min max" in milliseconds for one spec.
measure() {
  local spec=$1
  if [ "$tool" = hyperfine ]; then
    local json; json=$(mktemp)
    hyperfine -i --runs "$RUNS" --warmup 2 --shell=none --style none --export-json "$json" \
      "$PIPEC check --quiet $spec" >/dev/null 2>&1
    python3 - "$json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f'{r["median"] * 1e3:.2f} {r["min"] * 1e3:.2f} {r["max"] * 1e3:.2f}')
PY
    rm -f "$json"
  else
    "$PIPEC" check --quiet "$spec" || true   # warm the page cache
    for _ in $(seq "$RUNS"); do
      local t0 t1
      t0=$(date +%s%N)
      "$PIPEC" check --quiet "$spec" || true
      t1=$(date +%s%N)
      echo $(( (t1 - t0) / 1000 ))
    done | sort -n | awk '{a[NR] = $1} END {
      m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
      printf "%.2f %.2f %.2f\n", m / 1000, a[1] / 1000, a[NR] / 1000 }'
  fi
}

# The median CPU time (user + system) of RUNS runs, in ms: unlike wall time, it hardly moves when other
# processes share the cores.
cpu_ms() {
  python3 - "$RUNS" "$PIPEC" "$1" <<'PY'
import resource, statistics, subprocess, sys
runs, pipec, spec = int(sys.argv[1]), sys.argv[2], sys.argv[3]
times = []
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([pipec, "check", "--quiet", spec])
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    times.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
print(f"{statistics.median(times):.2f}")
PY
}

printf '\npipec check, %s runs per spec (wall time: %s), %s cores, load %s\n' "$RUNS" "$tool" "$(nproc)" \
  "$(cut -d' ' -f1 /proc/loadavg)"
printf '%-42s %6s %5s %10s %9s %9s %10s\n' "spec" "lines" "exit" "median ms" "min ms" "max ms" "cpu ms"
for spec in "${specs[@]}"; do
  set +e
  "$PIPEC" check --quiet "$spec"
  rc=$?
  set -e
  read -r med lo hi < <(measure "$spec")
  cpu=-
  command -v python3 >/dev/null && cpu=$(cpu_ms "$spec")
  printf '%-42s %6s %5s %10s %9s %9s %10s\n' "$spec" "$(wc -l <"$spec")" "$rc" "$med" "$lo" "$hi" "$cpu"
done

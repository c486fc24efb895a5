#!/usr/bin/env bash
# The README's second command, and CI's (.ci/run): installs what is missing, then runs every job, one
# after the other, and prints one line per job with its result and duration. Any failed job fails the
# whole (exit 1), after the remaining jobs have run, and its log's last lines are printed.
#
#   scripts/test.sh              # every job
#   scripts/test.sh JOB...       # only these, e.g. `scripts/test.sh build ctest`
#
# Jobs:
#   format       .clang-format over the C/C++ sources (scripts/check_format.sh)
#   build        the normal build in build/ (warnings are errors: PIPEC_WERROR)
#   ctest        every test of build/: unit, runtime, golden language and CUDA, conformance, difftest...
#   fuzz-front   the front-end fuzzer for PIPEC_FUZZ_SECONDS (60) seconds (tests/fuzz/run.sh)
#   fuzz-images  the image-decoder fuzzer for as long (tests/fuzz/run_images.sh)
#   asan         ASan + UBSan build in build-asan/, every test (scripts/sanitize.sh asan)
#   tsan         TSan build in build-tsan/, the threaded runtime tests (scripts/sanitize.sh tsan)
#
# With no JOB, every job. CI gives a fresh clone on a fresh 2-core machine 90 minutes. Its run of
# 2026-11-28 stopped there: build 19m09, ctest 4m17, fuzz-front 9m05, fuzz-images 1m05, asan 38m44, and
# tsan unfinished. Measured since on a 2-core machine with ccache off, the same speed within 7%: build
# 17m52, the ASan build 17m28 and its tests 6m, the TSan build 12m and its tests about 5m, after the
# changes their comments explain (scripts/sanitize.sh, tests/CMakeLists.txt, tests/fuzz/run.sh). A job
# that adds minutes says so here; keep the whole under 75.
#
# Logs: build-ci/JOB.log.
set -uo pipefail

main() {
  cd "$(dirname "$0")/.."

  all_jobs=(format build ctest fuzz-front fuzz-images asan tsan)
  default_jobs=("${all_jobs[@]}")
  jobs=("$@")
  [ ${#jobs[@]} -gt 0 ] || jobs=("${default_jobs[@]}")
  fuzz_seconds="${PIPEC_FUZZ_SECONDS:-60}"
  ncpu=$(nproc 2>/dev/null || echo 2)

  run_job() {
    case "$1" in
      format) bash scripts/check_format.sh ;;
      build)
        # -DPIPEC_WERROR=ON explicitly: a build/ configured earlier with it off is switched back on.
        cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPEC_WERROR=ON >/dev/null &&
          bash scripts/build.sh ;;
      ctest) (cd build && ctest --output-on-failure -j"$ncpu") ;;
      fuzz-front) bash tests/fuzz/run.sh "$fuzz_seconds" ;;
      fuzz-images) bash tests/fuzz/run_images.sh "$fuzz_seconds" ;;
      asan) bash scripts/sanitize.sh asan ;;
      tsan) bash scripts/sanitize.sh tsan ;;
      *) echo "unknown job '$1' (jobs: ${all_jobs[*]})"; return 2 ;;
    esac
  }

  bash scripts/setup.sh || exit 1
  mkdir -p build-ci
  # Every job's build directory stays (build/ about 0.7 GB, build-asan/ 2.0 GB, build-tsan/ and
  # build-fuzz/ under 0.5 GB each): a run that fails for want of disk should say so at once.
  free_disk() { df -Pk . | awk 'NR == 2 {printf "%.1f GB", $4 / 1048576}'; }
  echo "free disk: $(free_disk)"
  failed=()
  summary=()
  start_all=$(date +%s)
  for job in "${jobs[@]}"; do
    log="build-ci/$job.log"
    start=$(date +%s)
    run_job "$job" >"$log" 2>&1
    status=$?
    secs=$(($(date +%s) - start))
    took=$(printf '%dm%02ds' $((secs / 60)) $((secs % 60)))
    if [ "$status" -eq 0 ]; then
      line=$(printf '%-12s ok      %8s' "$job" "$took")
    else
      line=$(printf '%-12s FAILED  %8s  (exit %d; log %s)' "$job" "$took" "$status" "$log")
      failed+=("$job")
      echo "---- last 80 lines of $log"
      tail -n 80 "$log"
      echo "----"
    fi
    echo "$line"
    summary+=("$line")
  done
  secs=$(($(date +%s) - start_all))
  echo
  echo "jobs:"
  printf '  %s\n' "${summary[@]}"
  printf '  %-12s %s  %8s\n' "total" "      " "$(printf '%dm%02ds' $((secs / 60)) $((secs % 60)))"
  echo "free disk: $(free_disk)"
  if [ ${#failed[@]} -gt 0 ]; then
    # The end of a CI log may be all that is kept: each failed job's gist (the fuzz scripts print one,
    # tests/fuzz/report_failure.sh) or its last lines come again here, after the table.
    for job in "${failed[@]}"; do
      log="build-ci/$job.log"
      echo "---- why $job failed ($log)"
      if grep -q '^---- gist$' "$log"; then
        sed -n '/^---- gist$/,/^---- end of gist$/p' "$log" | sed '1d;$d' | tail -n 12
      else
        tail -n 6 "$log" | cut -c1-300
      fi
    done
    echo "FAILED: ${failed[*]}"
    exit 1
  fi
  echo "all jobs passed"
}

# The whole script is read before it runs, so editing it while CI runs does not change that run.
main "$@"

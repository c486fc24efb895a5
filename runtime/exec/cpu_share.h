// The cores a run actually gets. The autotuner's model plans with the cores of the process's CPU
// affinity (ThreadPool::default_size), but on a machine other processes load, the run's threads wait
// in the kernel's run queue for a core and a second thread of work buys nothing: the tuner raised a
// map to 2 chunks in flight on 2 cores at load average 10 and lost a fifth of the rate
// (docs/performance.md, "Autotuning"). Linux counts, per thread, the time it ran and the time it was
// runnable but waiting (/proc/self/task/*/schedstat); from those over an interval this says how many
// cores the process got when it wanted more.
#pragma once

#include <cstdint>

namespace pipec {

/// Nanoseconds every thread of the process ran on a core, and waited runnable for one, since it
/// started; `known` false where the kernel does not say (no schedstat).
struct ProcessCpuTimes {
  int64_t run_ns = 0;
  int64_t wait_ns = 0;
  bool known = false;
};
ProcessCpuTimes process_cpu_times();

/// CPU time the calling thread has run, in ns (CLOCK_THREAD_CPUTIME_ID). A map's task is timed with it
/// rather than the wall clock: where the pipeline's threads outnumber the cores, a task also waits for
/// a core while it runs, and wall time counted that wait as the map's work (the chess map's tasks
/// measured 1.5 times their CPU time with 2 workers on 2 cores next to the prefetch's thread), which
/// the autotuner then planned with.
int64_t thread_cpu_ns();

/// The cores the process could use over an interval of `wall_ns` in which its threads ran
/// `delta.run_ns` and waited `delta.wait_ns`, of `cores`: all of them while its threads hardly waited
/// (under kWaitShare of their runnable time: it got what it asked for), else the cores it did get
/// (run time over wall time), at least 1. Threads of the run that outnumber the cores wait too, but
/// then they also run on every core, so the answer stays `cores`.
constexpr double kWaitShare = 0.25;
double available_cores(int cores, const ProcessCpuTimes& delta, int64_t wall_ns);

}  // namespace pipec

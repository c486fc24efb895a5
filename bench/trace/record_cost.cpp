// What recording one trace event costs (runtime/trace/trace.h), with no pipeline around it: N spans
// (interned name, two numeric args) and N counter samples recorded on 1 and on 2 threads at once,
// with tracing off (each call reads the enabled flag and returns) and on. Prints ns per event, the
// figure bench/trace/run.sh's events/s column multiplies into the share of a run's time.
//
//   build/bench/trace_record_cost [N]      # N = 1000000 per thread
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "runtime/trace/trace.h"

namespace {

using pipec::trace::NameId;

// Seconds to record `n` spans and `n` counter samples on each of `threads` threads.
double record(int threads, int64_t n, NameId span, NameId counter) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([=] {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t now = pipec::trace::now_ns();
        if (pipec::trace::enabled()) {
          pipec::trace::complete("stage", span, now, 100, {"rows", 4}, {"own_us", 0.1});
          pipec::trace::counter(counter, now, static_cast<double>(i & 7));
        }
      }
    });
  for (auto& w : workers) w.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const NameId span = pipec::trace::name("#1 map"), counter = pipec::trace::name("#3 prefetch queue");
  std::printf("%-10s %-8s %14s %16s\n", "threads", "tracing", "ns per event", "events/s/thread");
  for (int threads : {1, 2}) {
    for (bool on : {false, true}) {
      double best = 1e30;
      for (int round = 0; round < 5; ++round) {  // best of 5: the machine is shared
        if (on) pipec::trace::start("bench");
        best = std::min(best, record(threads, n, span, counter));
        pipec::trace::stop();
      }
      const double per_event = best / (2.0 * n) * 1e9;  // per thread: its events run one after another
      std::printf("%-10d %-8s %14.1f %16.0f\n", threads, on ? "on" : "off", per_event, 1e9 / per_event);
    }
  }
  return 0;
}

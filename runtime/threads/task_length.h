// How long a stage's pool tasks take, so that it submits them as helpable (ThreadPool::wait_helping)
// only while they are short: a thread that runs one cannot refill its own stage's window meanwhile. The
// seg benchmark's map (43 ms a task, 2 workers) made 5% fewer examples/s when the thread waiting for
// it ran some of them; chess's map and parses (about 50 and 100 us) gain from it.
#pragma once

#include <atomic>
#include <cstdint>

namespace pipec {

class TaskLength {
 public:
  static constexpr int64_t kShortNs = 1'000'000;

  /// A task of the stage took `ns` (its thread's CPU time); any thread.
  void add(int64_t ns) {
    sum_ns_.fetch_add(ns, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Whether the tasks so far averaged at most kShortNs; false before the first has finished.
  bool short_tasks() const {
    const int64_t n = count_.load(std::memory_order_relaxed);
    return n > 0 && sum_ns_.load(std::memory_order_relaxed) <= kShortNs * n;
  }

 private:
  std::atomic<int64_t> sum_ns_{0};
  std::atomic<int64_t> count_{0};
};

}  // namespace pipec

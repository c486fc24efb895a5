// A fixed-size worker pool with future-returning submit() and a blocking parallel_for().
//
// Fixed size because pipeline stages are CPU-bound: more threads than cores only adds contention.
// parallel_for lets the calling thread work on chunks too, so it makes progress even when every
// worker is busy, including when it is called from inside a pool task (no nested-use deadlock); a
// stage waiting for a task's result can do the same with wait_helping.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace pipec {

class ThreadPool {
 public:
  /// `num_threads` workers; 0 (the default) means std::thread::hardware_concurrency(), at least 1.
  explicit ThreadPool(int num_threads = 0);
  /// Runs every task already submitted (so no future is left without a value), then joins.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  /// How many workers take tasks (1..size(), size() at first). The rest wait until raised again, so a
  /// trainer that needs cores for its own compute can take them from the pipeline (the autotuner plans
  /// with the same share: runtime/exec/autotuner.h). Tasks already running finish.
  void set_active_workers(int n);
  int active_workers() const;
  /// Workers taking tasks that wait for one now, with nothing queued: a hint of the pool's slack (it
  /// may change at once), for work that could run on either side of a hand-off.
  int idle_workers() const { return idle_.load(std::memory_order_relaxed); }
  /// The cores this process may run on (its CPU affinity: taskset, a container's cpuset), else
  /// hardware_concurrency(), or 1 when the platform cannot tell.
  static int default_size();

  /// Runs `fn()` on a worker. The future carries its result or the exception it threw. `helpable`: a
  /// thread in wait_helping may run it instead (short tasks only: runtime/threads/task_length.h).
  template <class F>
  auto submit(F&& fn, bool helpable = false) -> std::future<std::invoke_result_t<std::decay_t<F>&>> {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    // shared_ptr because std::function needs a copyable callable and packaged_task is move-only.
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
    std::future<R> result = task->get_future();
    enqueue([task] { (*task)(); }, helpable);
    return result;
  }

  /// Calls fn(chunk_begin, chunk_end) over [begin, end) split into chunks of `grain` indices (the last
  /// may be shorter); grain <= 0 picks about 4 chunks per thread. Blocks until every chunk has finished.
  /// If chunks throw, the first exception caught is rethrown here after running chunks complete;
  /// chunks not yet started are skipped.
  void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  /// Waits until `f` (the std::future or std::shared_future of a task submitted here) is ready, and
  /// meanwhile runs queued helpable tasks on the calling thread, the oldest first, while more tasks are
  /// queued than there are workers taking tasks: the thread works instead of sleeping until a worker is
  /// done, and
  /// the workers still find a task each when they finish theirs (one that finds the queue empty sleeps,
  /// and waking it is the cost saved). On a machine with few cores a wake-up across cores costs tens
  /// of microseconds of CPU (docs/performance.md, "A prefetch with nothing to overlap"). Only for tasks
  /// that never wait for the caller: every task submitted here is plain compute (a map's batch, a
  /// chunk's parse). Only tasks submitted as helpable, which are short: a thread running a task cannot
  /// refill its stage's window meanwhile (the seg benchmark's map, 43 ms a task, lost 5% so).
  template <class Future>
  void wait_helping(const Future& f) {
    while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      if (!run_one_spare()) {
        f.wait();
        return;
      }
  }
  /// Runs the oldest queued helpable task on the calling thread when more tasks are queued than there
  /// are workers taking tasks; false (and runs nothing) otherwise.
  bool run_one_spare();

 private:
  void enqueue(std::function<void()> task, bool helpable = false);
  void worker_loop(int index);

  mutable std::mutex mu_;
  std::condition_variable has_work_;  // workers that take tasks wait here for one
  std::condition_variable held_;      // workers held back (index >= active_) wait here
  struct Queued {
    std::function<void()> run;
    bool helpable = false;  // wait_helping may run it
  };
  std::deque<Queued> queue_;
  bool stopping_ = false;
  int active_ = 0;            // guarded by mu_
  std::atomic<int> idle_{0};  // workers waiting on has_work_
  std::vector<std::thread> workers_;
};

}  // namespace pipec

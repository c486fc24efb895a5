#include "runtime/threads/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>

#include "runtime/trace/trace.h"

namespace pipec {

int ThreadPool::default_size() {
  // The cores this process may run on (taskset, a container's cpuset), not the machine's.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads) {
  const int n = num_threads > 0 ? num_threads : default_size();
  workers_.reserve(n);
  active_ = n;
  for (int i = 0; i < n; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  has_work_.notify_all();
  held_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::enqueue(std::function<void()> task, bool helpable) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(task), helpable});
  }
  // Only workers that take tasks wait on has_work_ (held-back ones wait on held_), so one wake-up
  // reaches one that can take it.
  has_work_.notify_one();
}

void ThreadPool::set_active_workers(int n) {
  {
    std::lock_guard lock(mu_);
    active_ = std::clamp(n, 1, size());
  }
  // Every waiter looks again: a worker held back now moves to held_, one let go to has_work_.
  has_work_.notify_all();
  held_.notify_all();
}

int ThreadPool::active_workers() const {
  std::lock_guard lock(mu_);
  return active_;
}

void ThreadPool::worker_loop(int index) {
  trace::set_thread_name("pool worker " + std::to_string(index));
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      for (;;) {
        if (stopping_) break;
        if (index >= active_) held_.wait(lock);
        else if (queue_.empty()) {
          idle_.fetch_add(1, std::memory_order_relaxed);
          has_work_.wait(lock);
          idle_.fetch_sub(1, std::memory_order_relaxed);
        } else break;
      }
      // Drain before exiting: tasks queued during shutdown (even by other tasks) still run.
      if (queue_.empty()) return;
      task = std::move(queue_.front().run);
      queue_.pop_front();
    }
    task();  // submit() and parallel_for() wrap their work, so nothing escapes here
  }
}

bool ThreadPool::run_one_spare() {
  std::function<void()> task;
  {
    std::lock_guard lock(mu_);
    if (queue_.size() <= static_cast<size_t>(active_)) return false;
    auto it = std::find_if(queue_.begin(), queue_.end(), [](const Queued& q) { return q.helpable; });
    if (it == queue_.end()) return false;
    task = std::move(it->run);
    queue_.erase(it);
  }
  task();  // wrapped by submit() or parallel_for(), as on a worker
  return true;
}

namespace {

// Shared between the caller of parallel_for and its helper tasks. Helpers may start after
// parallel_for has returned (all chunks already taken), so this outlives the call via shared_ptr;
// `fn` is only touched by whoever claims a chunk, and the caller waits for all claimed chunks.
struct ParallelForState {
  int64_t begin, end, grain, num_chunks;
  const std::function<void(int64_t, int64_t)>* fn;
  std::atomic<int64_t> next_chunk{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::condition_variable all_done;
  int64_t chunks_done = 0;   // guarded by mu
  std::exception_ptr error;  // guarded by mu; the first one caught

  // Claims and runs chunks until none are left.
  void work() {
    for (;;) {
      const int64_t chunk = next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (chunk >= num_chunks) return;
      std::exception_ptr caught;
      if (!failed.load(std::memory_order_relaxed)) {
        const int64_t lo = begin + chunk * grain;
        const int64_t hi = lo + std::min(grain, end - lo);  // no overflow near INT64_MAX
        try {
          (*fn)(lo, hi);
        } catch (...) {
          caught = std::current_exception();
          failed.store(true, std::memory_order_relaxed);
        }
      }
      std::lock_guard lock(mu);
      if (caught && !error) error = caught;
      if (++chunks_done == num_chunks) all_done.notify_all();
    }
  }
};

}  // namespace

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  const int64_t n = end - begin;
  if (grain <= 0) grain = std::max<int64_t>(1, n / (4 * int64_t{size()}));
  auto state = std::make_shared<ParallelForState>();
  state->begin = begin;
  state->end = end;
  state->grain = grain;
  state->num_chunks = n / grain + (n % grain != 0);
  state->fn = &fn;

  // One helper per worker at most, and none for the chunk the caller takes itself.
  const int64_t helpers = std::min<int64_t>(size(), state->num_chunks - 1);
  for (int64_t i = 0; i < helpers; ++i) enqueue([state] { state->work(); });
  state->work();

  std::exception_ptr error;
  {
    std::unique_lock lock(state->mu);
    state->all_done.wait(lock, [&] { return state->chunks_done == state->num_chunks; });
    // Take the exception out: a late helper may drop the last reference to `state` on its own thread,
    // and the exception object should not be freed there while the caller is still handling it.
    error = std::move(state->error);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace pipec

#include "runtime/threads/task_length.h"
#include "runtime/threads/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pipec {
namespace {

using namespace std::chrono_literals;

TEST(ThreadPool, DefaultSizeIsHardwareConcurrency) {
  ThreadPool pool;
  const unsigned hw = std::thread::hardware_concurrency();
  EXPECT_EQ(pool.size(), hw == 0 ? 1 : static_cast<int>(hw));
  EXPECT_EQ(ThreadPool(3).size(), 3);
}

TEST(ThreadPool, SubmitReturnsValue) {
  ThreadPool pool(2);
  auto a = pool.submit([] { return 6 * 7; });
  auto b = pool.submit([] { return std::string("done"); });
  auto c = pool.submit([] {});
  EXPECT_EQ(a.get(), 42);
  EXPECT_EQ(b.get(), "done");
  c.get();
}

// Waits up to 5 s for pool.idle_workers() to be `want`; returns whether it got there.
bool idle_becomes(const ThreadPool& pool, int want) {
  for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;) {
    if (pool.idle_workers() == want) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pool.idle_workers() == want;
}

TEST(ThreadPool, IdleWorkersCountsThoseWaitingForATask) {
  ThreadPool pool(3);
  EXPECT_TRUE(idle_becomes(pool, 3)) << pool.idle_workers();
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  auto busy = pool.submit([go] { go.wait(); });
  EXPECT_TRUE(idle_becomes(pool, 2)) << pool.idle_workers();
  auto busier = pool.submit([go] { go.wait(); });
  EXPECT_TRUE(idle_becomes(pool, 1)) << pool.idle_workers();
  release.set_value();
  busy.get();
  busier.get();
  EXPECT_TRUE(idle_becomes(pool, 3)) << pool.idle_workers();
  pool.set_active_workers(1);  // workers held back take no task: they are not idle for one
  EXPECT_TRUE(idle_becomes(pool, 1)) << pool.idle_workers();
}

TEST(ThreadPool, SubmitAcceptsMoveOnlyCallable) {
  ThreadPool pool(1);
  auto p = std::make_unique<int>(5);
  auto f = pool.submit([p = std::move(p)] { return *p + 1; });
  EXPECT_EQ(f.get(), 6);
}

TEST(ThreadPool, SubmitPropagatesException) {
  ThreadPool pool(2);
  auto f = pool.submit([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(f.get(), std::runtime_error);
  // The worker survived the throw.
  EXPECT_EQ(pool.submit([] { return 1; }).get(), 1);
}

TEST(ThreadPool, TasksRunConcurrently) {
  // Each task waits for the other: only completes if two workers run them at the same time.
  ThreadPool pool(2);
  std::promise<void> a_started, b_started;
  auto a = pool.submit([&] {
    a_started.set_value();
    return b_started.get_future().wait_for(10s) == std::future_status::ready;
  });
  auto b = pool.submit([&] {
    b_started.set_value();
    return a_started.get_future().wait_for(10s) == std::future_status::ready;
  });
  EXPECT_TRUE(a.get());
  EXPECT_TRUE(b.get());
}

// Workers held back take no tasks, however many are queued; raised again, they all do. (The autotuner
// keeps only the workers a pipeline needs: runtime/exec/autotuner.h.)
TEST(ThreadPool, HeldBackWorkersTakeNoTasksUntilRaised) {
  ThreadPool pool(3);
  pool.set_active_workers(1);
  EXPECT_EQ(pool.active_workers(), 1);
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  std::vector<std::future<void>> futures;
  for (int i = 0; i < 200; ++i)
    futures.push_back(pool.submit([&] {
      std::lock_guard lock(mu);
      ran_on.insert(std::this_thread::get_id());
    }));
  for (auto& f : futures) f.get();
  EXPECT_EQ(ran_on.size(), 1u);
  // Raised to 3: three tasks that each wait for the others complete only on three workers at once.
  pool.set_active_workers(3);
  std::atomic<int> arrived{0};
  std::vector<std::future<bool>> all;
  for (int i = 0; i < 3; ++i)
    all.push_back(pool.submit([&] {
      ++arrived;
      for (int spin = 0; spin < 10000 && arrived.load() < 3; ++spin) std::this_thread::sleep_for(1ms);
      return arrived.load() == 3;
    }));
  for (auto& f : all) EXPECT_TRUE(f.get());
  // Lowered again while idle: still every task runs (on the one worker left).
  pool.set_active_workers(1);
  EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);
}

TEST(ThreadPool, DestructorRunsQueuedTasks) {
  std::atomic<int> ran{0};
  std::vector<std::future<void>> futures;
  {
    ThreadPool pool(1);
    futures.push_back(pool.submit([] { std::this_thread::sleep_for(20ms); }));
    for (int i = 0; i < 100; ++i) futures.push_back(pool.submit([&] { ++ran; }));
  }
  EXPECT_EQ(ran.load(), 100);
  for (auto& f : futures) EXPECT_NO_THROW(f.get());  // no broken promises
}

TEST(ThreadPool, ParallelForVisitsEveryIndexOnce) {
  ThreadPool pool(3);
  for (int64_t grain : {0, 1, 7, 64, 1000, 5000}) {
    const int64_t begin = -37, end = 1000;
    std::vector<std::atomic<int>> hits(end - begin);
    std::atomic<int> bad_chunks{0};
    pool.parallel_for(begin, end, grain, [&](int64_t lo, int64_t hi) {
      if (lo < begin || hi > end || lo >= hi || (grain > 0 && hi - lo > grain)) ++bad_chunks;
      for (int64_t i = lo; i < hi; ++i) ++hits[i - begin];
    });
    EXPECT_EQ(bad_chunks.load(), 0) << "grain " << grain;
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "grain " << grain;
  }
}

TEST(ThreadPool, ParallelForEmptyRangeCallsNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  pool.parallel_for(5, 2, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, ParallelForUsesSeveralThreads) {
  // Every chunk waits until a second thread has joined in, so the caller cannot run them all alone
  // however the scheduler orders things; the wait is bounded so a broken pool fails instead of hanging.
  ThreadPool pool(2);
  std::mutex mu;
  std::condition_variable joined;
  std::set<std::thread::id> ids;
  pool.parallel_for(0, 8, 1, [&](int64_t, int64_t) {
    std::unique_lock lock(mu);
    ids.insert(std::this_thread::get_id());
    joined.notify_all();
    joined.wait_for(lock, 10s, [&] { return ids.size() >= 2; });
  });
  EXPECT_GE(ids.size(), 2u);
}

TEST(ThreadPool, ParallelForPropagatesException) {
  // The only worker is held busy, so the caller claims every chunk itself, in order: the failure in
  // chunk 5 is seen before chunk 6 is claimed, and exactly chunks 0..5 run. (With free workers the count
  // depends on scheduling: a thread that claimed chunk 5 may be descheduled while others finish the rest.)
  ThreadPool pool(1);
  std::promise<void> release;
  auto blocker = pool.submit([gate = release.get_future().share()] { gate.wait(); });
  std::atomic<int> chunks_run{0};
  try {
    pool.parallel_for(0, 1000, 1, [&](int64_t lo, int64_t) {
      ++chunks_run;
      if (lo == 5) throw std::runtime_error("chunk 5 failed");
    });
    ADD_FAILURE() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 5 failed");
  }
  EXPECT_EQ(chunks_run.load(), 6);  // chunks not started when the failure was seen are skipped
  release.set_value();
  blocker.get();
  // The pool is still usable.
  int64_t sum = 0;
  pool.parallel_for(0, 10, 100, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) sum += i;
  });
  EXPECT_EQ(sum, 45);
}

TEST(ThreadPool, ParallelForRethrowsOneOfSeveralExceptions) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(0, 64, 1, [](int64_t, int64_t) { throw std::logic_error("x"); }), std::logic_error);
}

TEST(ThreadPool, ParallelForInsidePoolTaskDoesNotDeadlock) {
  // The only worker runs the outer task, so the inner parallel_for must make progress on its own.
  ThreadPool pool(1);
  auto f = pool.submit([&] {
    std::atomic<int64_t> sum{0};
    pool.parallel_for(0, 100, 3, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) sum += i;
    });
    return sum.load();
  });
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), 4950);
}

// A task that blocks a worker until `open` is ready, so the tests decide what is queued; returns once
// a worker has taken it (`running` counts the blockers started).
std::future<void> block_a_worker(ThreadPool& pool, std::shared_future<void> open, std::atomic<int>& running) {
  const int before = running.load();
  auto f = pool.submit([open, &running] {
    ++running;
    open.wait();
  });
  while (running.load() == before) std::this_thread::sleep_for(1ms);
  return f;
}

TEST(ThreadPool, WaitHelpingRunsHelpableTasksQueuedBeyondOnePerWorkerOnTheCaller) {
  ThreadPool pool(1);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::atomic<int> running{0};
  auto busy = block_a_worker(pool, open, running);
  auto where = [] { return std::this_thread::get_id(); };
  auto x = pool.submit(where);  // queued first, but not helpable
  auto a = pool.submit(where, true);
  auto b = pool.submit(where, true);
  auto c = pool.submit([]() -> int { throw std::runtime_error("from c"); }, true);
  // A wait that does not help would never end while the worker is blocked: after 5 s the worker is let
  // go, so such a wait fails the test below instead of hanging it.
  std::once_flag opened;
  auto open_gate = [&] { std::call_once(opened, [&] { gate.set_value(); }); };
  std::promise<void> finished;
  std::thread watchdog([&, done = finished.get_future()] {
    if (done.wait_for(5s) == std::future_status::timeout) open_gate();
  });
  // Four queued for one busy worker: waiting for b, the caller runs the oldest helpable first (a), then
  // b; never x, which was not submitted as helpable.
  pool.wait_helping(b);
  EXPECT_EQ(a.wait_for(0s), std::future_status::ready) << "a was queued before b";
  EXPECT_EQ(a.get(), std::this_thread::get_id());
  EXPECT_EQ(b.get(), std::this_thread::get_id());
  EXPECT_NE(c.wait_for(0s), std::future_status::ready) << "c is left to the worker";
  EXPECT_NE(x.wait_for(0s), std::future_status::ready) << "x is not helpable";
  finished.set_value();
  watchdog.join();
  open_gate();
  pool.wait_helping(c);  // now on the worker
  EXPECT_THROW(c.get(), std::runtime_error);
  EXPECT_NE(x.get(), std::this_thread::get_id());
  busy.get();
}

TEST(ThreadPool, WaitHelpingLeavesEachWorkerATask) {
  ThreadPool pool(2);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::atomic<int> running{0};
  auto busy0 = block_a_worker(pool, open, running);
  auto busy1 = block_a_worker(pool, open, running);
  auto where = [] { return std::this_thread::get_id(); };
  std::shared_future<std::thread::id> a = pool.submit(where, true).share();
  auto b = pool.submit(where, true);
  // Two queued for two workers: the caller takes neither, and waits until a worker has run a.
  std::thread opener([&] {
    std::this_thread::sleep_for(30ms);
    gate.set_value();
  });
  pool.wait_helping(a);
  opener.join();
  EXPECT_NE(a.get(), std::this_thread::get_id());
  EXPECT_NE(b.get(), std::this_thread::get_id());
  busy0.get();
  busy1.get();
}

// Whether a stage's tasks may be run by a waiting thread: not before one has been timed, then while
// they average at most a millisecond.
TEST(TaskLength, ShortWhileTheMeanIsAtMostAMillisecond) {
  TaskLength t;
  EXPECT_FALSE(t.short_tasks()) << "nothing timed yet";
  t.add(50'000);
  t.add(150'000);
  EXPECT_TRUE(t.short_tasks());
  t.add(43'000'000);  // a seg task
  EXPECT_FALSE(t.short_tasks());
}

}  // namespace
}  // namespace pipec

#include "runtime/threads/bounded_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/threads/cancellation.h"

namespace pipec {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Waits for a blocked call to return. If it does not, closes the queue so that a broken cancellation
// path fails the test instead of hanging it in the future's destructor.
template <class R, class Q>
bool woke_or_close(std::future<R>& f, Q& q) {
  if (f.wait_for(5s) == std::future_status::ready) return true;
  q.close();
  return false;
}

TEST(BoundedQueue, FifoOrder) {
  BoundedQueue<int> q(4);
  EXPECT_EQ(q.capacity(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.push(i));
  EXPECT_EQ(q.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.pop(), i);
  EXPECT_EQ(q.size(), 0u);
}

TEST(BoundedQueue, ZeroCapacityRejected) { EXPECT_THROW(BoundedQueue<int>(0), std::invalid_argument); }

TEST(BoundedQueue, TryVariantsNeverBlock) {
  BoundedQueue<std::unique_ptr<int>> q(1);
  EXPECT_FALSE(q.try_pop().has_value());
  auto a = std::make_unique<int>(1);
  auto b = std::make_unique<int>(2);
  EXPECT_TRUE(q.try_push(a));
  EXPECT_EQ(a, nullptr);  // moved in
  EXPECT_FALSE(q.try_push(b));
  ASSERT_NE(b, nullptr);  // left untouched when full
  EXPECT_EQ(*b, 2);
  EXPECT_EQ(**q.try_pop(), 1);
}

TEST(BoundedQueue, PushBlocksWhileFull) {
  BoundedQueue<int> q(1);
  q.push(1);
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    q.push(2);
    pushed = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(pushed.load());
  EXPECT_EQ(q.pop(), 1);
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(q.pop(), 2);
}

TEST(BoundedQueue, PopBlocksWhileEmpty) {
  BoundedQueue<int> q(2);
  std::atomic<bool> popped{false};
  std::optional<int> got;
  std::thread consumer([&] {
    got = q.pop();
    popped = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(popped.load());
  q.push(7);
  consumer.join();
  EXPECT_EQ(got, 7);
}

TEST(BoundedQueue, CloseDrainsThenReturnsEmpty) {
  BoundedQueue<int> q(8);
  for (int i = 0; i < 3; ++i) q.push(i);
  q.close();
  EXPECT_TRUE(q.closed());
  EXPECT_FALSE(q.push(99));
  int tmp = 5;
  EXPECT_FALSE(q.try_push(tmp));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(q.pop(), i);
  EXPECT_EQ(q.pop(), std::nullopt);
  EXPECT_EQ(q.pop(), std::nullopt);  // stays drained
  q.close();                         // idempotent
}

TEST(BoundedQueue, CloseWakesAllBlockedConsumers) {
  BoundedQueue<int> q(2);
  std::vector<std::future<std::optional<int>>> consumers;
  for (int i = 0; i < 4; ++i) consumers.push_back(std::async(std::launch::async, [&] { return q.pop(); }));
  std::this_thread::sleep_for(30ms);
  q.close();
  for (auto& c : consumers) {
    ASSERT_EQ(c.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(c.get(), std::nullopt);
  }
}

TEST(BoundedQueue, CloseWakesBlockedProducer) {
  BoundedQueue<int> q(1);
  q.push(1);
  auto producer = std::async(std::launch::async, [&] { return q.push(2); });
  std::this_thread::sleep_for(30ms);
  q.close();
  ASSERT_EQ(producer.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(producer.get());
  EXPECT_EQ(q.pop(), 1);  // the item queued before close survives; the rejected one does not
  EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, CancelWakesBlockedPop) {
  BoundedQueue<int> q(1);
  CancellationToken token;
  const auto start = Clock::now();
  auto consumer = std::async(std::launch::async, [&] { return q.pop(token); });
  std::this_thread::sleep_for(30ms);
  token.cancel();
  ASSERT_TRUE(woke_or_close(consumer, q));
  EXPECT_EQ(consumer.get(), std::nullopt);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_FALSE(q.closed());  // cancellation is not closing
}

TEST(BoundedQueue, CancelWakesBlockedPush) {
  BoundedQueue<int> q(1);
  q.push(1);
  CancellationToken token;
  auto producer = std::async(std::launch::async, [&] { return q.push(2, token); });
  std::this_thread::sleep_for(30ms);
  token.cancel();
  ASSERT_TRUE(woke_or_close(producer, q));
  EXPECT_FALSE(producer.get());
  EXPECT_EQ(q.size(), 1u);
}

// A cancel that lands at any moment of a wait (before the waiter looks at the token, between its look
// and its sleep, during the sleep) wakes it: run many times with no pause between the two, so the cancel
// falls at every point of the waiter's way into its sleep.
TEST(BoundedQueue, CancelRacingAWaitAlwaysWakesIt) {
  for (int i = 0; i < 2000; ++i) {
    BoundedQueue<int> q(1);
    CancellationToken token;
    const bool push_side = i % 2 == 1;
    if (push_side) q.push(0);
    auto waiter =
        std::async(std::launch::async, [&] { return push_side ? q.push(1, token) : q.pop(token).has_value(); });
    if (i % 3 == 0) std::this_thread::yield();
    token.cancel();
    ASSERT_TRUE(woke_or_close(waiter, q)) << "round " << i;
    EXPECT_FALSE(waiter.get()) << "round " << i;
  }
}

TEST(BoundedQueue, AlreadyCancelledTokenDoesNotBlock) {
  BoundedQueue<int> q(1);
  CancellationToken token;
  token.cancel();
  EXPECT_EQ(q.pop(token), std::nullopt);
  EXPECT_TRUE(q.push(1, token));   // not full: no wait needed, so the push goes through
  EXPECT_FALSE(q.push(2, token));  // full: would block, returns at once instead
  EXPECT_EQ(q.pop(token), 1);      // items that are there can still be taken
}

TEST(BoundedQueue, FailedPushLeavesItemWithCaller) {
  BoundedQueue<std::unique_ptr<int>> q(1);
  ASSERT_TRUE(q.push(std::make_unique<int>(1)));
  CancellationToken token;
  token.cancel();
  auto item = std::make_unique<int>(2);
  EXPECT_FALSE(q.push(std::move(item), token));  // full + cancelled
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(*item, 2);
  q.close();
  EXPECT_FALSE(q.push(std::move(item)));  // closed
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(**q.pop(), 1);
  EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, PushCopiesConstLvalues) {
  BoundedQueue<std::string> q(2);
  const std::string s = "kept";
  EXPECT_TRUE(q.push(s));
  EXPECT_EQ(s, "kept");
  EXPECT_EQ(q.pop(), "kept");
}

TEST(BoundedQueue, CancelThroughParentTokenWakesWaiter) {
  BoundedQueue<int> q(1);
  CancellationToken parent;
  CancellationToken child = CancellationToken::child_of(parent);
  auto consumer = std::async(std::launch::async, [&] { return q.pop(child); });
  std::this_thread::sleep_for(30ms);
  parent.cancel();
  ASSERT_TRUE(woke_or_close(consumer, q));
  EXPECT_EQ(consumer.get(), std::nullopt);
}

TEST(BoundedQueue, ManyProducersConsumersNoLossNoDuplicates) {
  constexpr int kProducers = 4, kConsumers = 4, kPerProducer = 20000;
  BoundedQueue<std::unique_ptr<int>> q(16);
  std::vector<std::thread> producers, consumers;
  std::vector<std::vector<int>> received(kConsumers);
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) ASSERT_TRUE(q.push(std::make_unique<int>(p * kPerProducer + i)));
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&, c] {
      while (auto item = q.pop()) received[c].push_back(**item);
    });
  }
  for (auto& t : producers) t.join();
  q.close();
  for (auto& t : consumers) t.join();

  std::vector<int> all;
  for (auto& r : received) all.insert(all.end(), r.begin(), r.end());
  ASSERT_EQ(all.size(), size_t{kProducers * kPerProducer});
  std::sort(all.begin(), all.end());
  for (int i = 0; i < kProducers * kPerProducer; ++i) ASSERT_EQ(all[i], i);

  // Per producer, a single consumer sees items in the order they were pushed.
  for (auto& r : received) {
    std::vector<int> last(kProducers, -1);
    for (int v : r) {
      ASSERT_GT(v, last[v / kPerProducer]);
      last[v / kPerProducer] = v;
    }
  }
}

// pop_when: one wake-up for several items, never a wait for items that cannot come.

TEST(BoundedQueue, PopWhenSleepsUntilItsItemsAreQueued) {
  BoundedQueue<int> q(4);
  CancellationToken never;
  std::atomic<bool> popped{false};
  std::optional<int> got;
  std::thread consumer([&] {
    got = q.pop_when(2, never);
    popped = true;
  });
  std::this_thread::sleep_for(20ms);
  q.push(1);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(popped.load()) << "one item of the two it waits for";
  q.push(2);
  consumer.join();
  EXPECT_EQ(got, 1);
  EXPECT_EQ(q.pop_when(2, never), 2) << "an item already queued is taken without waiting";
}

TEST(BoundedQueue, PopWhenTakesWhatThereIsOnceReleased) {
  BoundedQueue<int> q(4);
  CancellationToken never;
  auto f = std::async(std::launch::async, [&] { return q.pop_when(3, never); });
  std::this_thread::sleep_for(20ms);
  q.push(5);
  EXPECT_EQ(f.wait_for(50ms), std::future_status::timeout);
  q.release_waiters();
  ASSERT_TRUE(woke_or_close(f, q));
  EXPECT_EQ(f.get(), 5);
  // Released, a waiter takes the first item pushed; held again, it waits for its count.
  auto g = std::async(std::launch::async, [&] { return q.pop_when(3, never); });
  std::this_thread::sleep_for(20ms);
  q.push(6);
  ASSERT_TRUE(woke_or_close(g, q));
  EXPECT_EQ(g.get(), 6);
  q.hold_waiters();
  auto h = std::async(std::launch::async, [&] { return q.pop_when(2, never); });
  std::this_thread::sleep_for(20ms);
  q.push(7);
  EXPECT_EQ(h.wait_for(50ms), std::future_status::timeout);
  q.push(8);
  ASSERT_TRUE(woke_or_close(h, q));
  EXPECT_EQ(h.get(), 7);
}

TEST(BoundedQueue, PopWhenWantsNoMoreThanFit) {
  // Wanting more than the capacity waits for a full queue, not forever; a smaller capacity set while
  // it waits wakes it when that many are there.
  BoundedQueue<int> q(2);
  CancellationToken never;
  auto f = std::async(std::launch::async, [&] { return q.pop_when(8, never); });
  std::this_thread::sleep_for(20ms);
  q.push(1);
  q.push(2);
  ASSERT_TRUE(woke_or_close(f, q));
  EXPECT_EQ(f.get(), 1);
  EXPECT_EQ(q.pop(), 2);
  auto g = std::async(std::launch::async, [&] { return q.pop_when(2, never); });
  std::this_thread::sleep_for(20ms);
  q.push(3);
  q.set_capacity(1);
  ASSERT_TRUE(woke_or_close(g, q));
  EXPECT_EQ(g.get(), 3);
}

TEST(BoundedQueue, PopWhenWakesOnCloseAndCancel) {
  BoundedQueue<int> q(4);
  CancellationToken never;
  auto f = std::async(std::launch::async, [&] { return q.pop_when(2, never); });
  std::this_thread::sleep_for(20ms);
  q.push(1);
  q.close();
  ASSERT_TRUE(woke_or_close(f, q));
  EXPECT_EQ(f.get(), 1) << "what was queued before the close";
  EXPECT_EQ(q.pop_when(2, never), std::nullopt);

  BoundedQueue<int> r(4);
  CancellationToken cancel;
  auto g = std::async(std::launch::async, [&] { return r.pop_when(2, cancel); });
  std::this_thread::sleep_for(20ms);
  r.push(1);
  cancel.cancel();
  ASSERT_TRUE(woke_or_close(g, r));
  EXPECT_EQ(g.get(), std::nullopt);
}

TEST(BoundedQueue, PopWhenPassesEveryItemInOrder) {
  // A producer that releases the waiter before its last item: nothing is lost or stuck.
  BoundedQueue<int> q(4);
  CancellationToken never;
  constexpr int kItems = 10001;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      if (i == kItems - 1) q.release_waiters();
      q.push(i);
    }
  });
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(q.pop_when(2, never), i);
  producer.join();
}

}  // namespace
}  // namespace pipec

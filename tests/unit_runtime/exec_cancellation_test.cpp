#include "runtime/threads/cancellation.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

namespace pipec {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(CancellationToken, StartsNotCancelled) {
  CancellationToken t;
  EXPECT_FALSE(t.cancelled());
  EXPECT_FALSE(t.stop_token().stop_requested());
  EXPECT_NO_THROW(t.throw_if_cancelled());
}

TEST(CancellationToken, CopiesShareStateAndCancelIsSticky) {
  CancellationToken a;
  CancellationToken b = a;
  CancellationToken unrelated;
  b.cancel();
  EXPECT_TRUE(a.cancelled());
  EXPECT_TRUE(a.stop_token().stop_requested());
  EXPECT_FALSE(unrelated.cancelled());
  a.cancel();  // idempotent
  EXPECT_TRUE(b.cancelled());
  EXPECT_THROW(a.throw_if_cancelled(), CancelledError);
}

TEST(CancellationToken, WaitForTimesOutWhenNotCancelled) {
  CancellationToken t;
  const auto start = Clock::now();
  EXPECT_FALSE(t.wait_for(30ms));
  EXPECT_GE(Clock::now() - start, 30ms);
}

TEST(CancellationToken, WaitForWakesPromptlyOnCancel) {
  CancellationToken t;
  const auto start = Clock::now();
  auto waiter = std::async(std::launch::async, [&] { return t.wait_for(30s); });
  std::this_thread::sleep_for(20ms);
  t.cancel();
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(CancellationToken, StopCallbackRunsOnCancel) {
  CancellationToken t;
  std::atomic<int> calls{0};
  {
    std::stop_callback cb(t.stop_token(), [&] { ++calls; });
    t.cancel();
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST(CancellationToken, ChildFollowsParent) {
  CancellationToken parent;
  CancellationToken child = CancellationToken::child_of(parent);
  CancellationToken grandchild = CancellationToken::child_of(child);
  EXPECT_FALSE(child.cancelled());
  parent.cancel();
  EXPECT_TRUE(child.cancelled());
  EXPECT_TRUE(grandchild.cancelled());
}

TEST(CancellationToken, ChildCancelDoesNotReachParent) {
  CancellationToken parent;
  CancellationToken child = CancellationToken::child_of(parent);
  CancellationToken sibling = CancellationToken::child_of(parent);
  child.cancel();
  EXPECT_TRUE(child.cancelled());
  EXPECT_FALSE(parent.cancelled());
  EXPECT_FALSE(sibling.cancelled());
}

TEST(CancellationToken, ChildOfCancelledParentStartsCancelled) {
  CancellationToken parent;
  parent.cancel();
  EXPECT_TRUE(CancellationToken::child_of(parent).cancelled());
}

TEST(CancellationToken, DestroyedChildUnregistersFromParent) {
  CancellationToken parent;
  for (int i = 0; i < 100; ++i) {
    CancellationToken child = CancellationToken::child_of(parent);
  }
  parent.cancel();  // must not touch the destroyed children
  EXPECT_TRUE(parent.cancelled());
}

// Installing handlers changes process-wide state (signal dispositions, a sticky token), so these run
// in a fresh child process (death tests, "threadsafe" style re-executes the binary) and the test
// binary itself keeps default signal behaviour and can be run repeatedly.
TEST(CancelSignalDeathTest, SigtermCancelsProcessToken) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_signal_cancellation();
        install_signal_cancellation();  // idempotent
        const CancellationToken& token = process_cancellation_token();
        const bool clean_before = !token.cancelled() && cancellation_signal() == 0;
        raise(SIGTERM);  // handled: the process keeps running
        const bool cancelled = token.wait_for(5s);
        // A pipeline token derived from the process token sees it too.
        const bool child_sees_it = CancellationToken::child_of(token).cancelled();
        std::fprintf(stderr, "before=%d cancelled=%d signal=%d child=%d\n", clean_before, cancelled,
                     cancellation_signal(), child_sees_it);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "before=1 cancelled=1 signal=15 child=1");
}

TEST(CancelSignalDeathTest, SecondSignalKillsProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_signal_cancellation();
        raise(SIGINT);  // first: cancels
        process_cancellation_token().wait_for(5s);
        raise(SIGINT);  // second: default action
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

}  // namespace
}  // namespace pipec

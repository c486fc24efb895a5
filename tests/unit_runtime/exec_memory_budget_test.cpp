// The run's memory budget (runtime/exec/memory_budget.h): fixed holdings are always counted and
// report when they pass the limit; optional items are granted only beside what is held and the room
// fixed buffers may still grow into; an unknown bound grants nothing; peaks are kept.
#include "runtime/exec/memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pipec {
namespace {

TEST(MemoryBudget, OptionalItemsLeaveTheRoomFixedBuffersWillNeed) {
  MemoryBudget m(1000, 3);
  m.raise_bound(0, 600);  // a shuffle buffer that will hold 600 bytes once it fills
  EXPECT_EQ(m.room(), 400u);
  EXPECT_FALSE(m.try_reserve(1, 500));
  EXPECT_TRUE(m.try_reserve(1, 400));
  EXPECT_EQ(m.room(), 0u);
  // The shuffle fills: every byte it was promised is there, and the total is the limit.
  EXPECT_TRUE(m.add_fixed(0, 600));
  EXPECT_EQ(m.used(), 1000u);
  EXPECT_LE(m.peak(), m.limit());
  m.release(1, 400);
  EXPECT_EQ(m.room(), 400u);
  EXPECT_EQ(m.stage_use(1).peak, 400u);
  EXPECT_EQ(m.stage_use(0).fixed, 600u);
}

TEST(MemoryBudget, FixedHoldingsPastTheLimitAreReportedAndStillCounted) {
  MemoryBudget m(1000, 2);
  EXPECT_TRUE(m.add_fixed(0, 700));
  EXPECT_FALSE(m.add_fixed(1, 400));
  EXPECT_EQ(m.used(), 1100u);
  EXPECT_TRUE(m.add_fixed(1, -400));
  EXPECT_EQ(m.used(), 700u);
  // A fixed buffer holding more than its bound says raises the bound.
  EXPECT_EQ(m.stage_use(0).bound, 700u);
}

TEST(MemoryBudget, AnUnknownBoundGrantsNothingUntilItIsKnown) {
  MemoryBudget m(1'000'000, 2);
  m.set_bound(0, MemoryBudget::kUnknownBound);  // a cache in its first pass, of a length the plan cannot tell
  EXPECT_EQ(m.room(), 0u);
  EXPECT_FALSE(m.try_reserve(1, 1));
  EXPECT_TRUE(m.add_fixed(0, 5000));
  m.set_bound(0, 5000);  // the pass is complete
  EXPECT_EQ(m.room(), 1'000'000u - 5000u);
  EXPECT_TRUE(m.try_reserve(1, 10'000));
}

TEST(MemoryBudget, ConcurrentReservationsNeverPassTheLimit) {
  MemoryBudget m(10'000, 4);
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        if (m.try_reserve(t, 300)) {
          if (m.used() > m.limit()) over = true;
          m.release(t, 300);
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_FALSE(over.load());
  EXPECT_LE(m.peak(), 10'000u);
  EXPECT_EQ(m.used(), 0u);
}

TEST(MemoryBudget, SizesPrintInDecimalUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(262'144), "262.1 KB");
  EXPECT_EQ(format_bytes(2'100'000'000), "2.1 GB");
  EXPECT_GT(default_memory_budget(), 0u);
}

}  // namespace
}  // namespace pipec

// The cores a run gets (runtime/exec/cpu_share.h): all of them while its threads hardly wait for a
// core, whatever they used; the ones it got when they wait; never fewer than 1 or more than it has;
// and the kernel's counts grow while a thread works.
#include "runtime/exec/cpu_share.h"

#include <gtest/gtest.h>

#include <chrono>

namespace pipec {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(CpuShare, ThreadsThatHardlyWaitHaveEveryCore) {
  // Half a core used, 10% of the runnable time waiting: the run asked for little and got it.
  EXPECT_DOUBLE_EQ(available_cores(2, {kSecond / 2, kSecond / 18, true}, kSecond), 2.0);
}

TEST(CpuShare, ThreadsThatWaitHaveTheCoresTheyGot) {
  // Other processes load the machine: 0.8 core-seconds run in a second, 2 seconds waiting.
  EXPECT_DOUBLE_EQ(available_cores(4, {8 * kSecond / 10, 2 * kSecond, true}, kSecond), 1.0);
  EXPECT_DOUBLE_EQ(available_cores(4, {25 * kSecond / 10, 3 * kSecond, true}, kSecond), 2.5);
}

TEST(CpuShare, TheRunsOwnThreadsOutnumberingTheCoresStillHaveEveryCore) {
  // 3 busy threads on 2 cores and nothing else: 2 core-seconds run, 1 waiting.
  EXPECT_DOUBLE_EQ(available_cores(2, {2 * kSecond, kSecond, true}, kSecond), 2.0);
}

TEST(CpuShare, UnknownTimesOrAnEmptyIntervalKeepEveryCore) {
  EXPECT_DOUBLE_EQ(available_cores(2, {0, 0, false}, kSecond), 2.0);
  EXPECT_DOUBLE_EQ(available_cores(2, {kSecond, kSecond, true}, 0), 2.0);
  EXPECT_DOUBLE_EQ(available_cores(0, {0, 0, false}, kSecond), 1.0);
}

TEST(CpuShare, TheKernelsCountsGrowWhileAThreadWorks) {
  const ProcessCpuTimes before = process_cpu_times();
  if (!before.known) GTEST_SKIP() << "no /proc/self/task/*/schedstat on this kernel";
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < until) x = x + 1;
  const ProcessCpuTimes after = process_cpu_times();
  EXPECT_GT(after.run_ns, before.run_ns);
  EXPECT_GE(after.wait_ns, before.wait_ns);
}

}  // namespace
}  // namespace pipec

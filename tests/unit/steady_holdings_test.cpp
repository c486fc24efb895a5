// What a pipeline's buffers hold once a slower consumer has let them fill (runtime/exec/footprint.h's
// steady_holdings), the input pipeline's part of a training run's memory plan: each buffer's bytes from
// the plan, at the sizes its `auto` parameters start with on the run's threads.
#include <gtest/gtest.h>

#include "runtime/exec/footprint.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

// 1 KB elements: range -> map (f32[256]) -> shuffle -> batch of 10 -> prefetch.
std::string spec(const std::string& map_args, const std::string& prefetch) {
  return R"(pipeline data = range(1000)
  | map(r => { x: random_uniform([256], -1.0, 1.0, seed = 1) })" +
         map_args + R"()
  | shuffle(10_000, seed = 1)
  | batch(10, drop_remainder = true)
  | prefetch()" +
         prefetch + ")\n";
}

constexpr uint64_t kElement = 256 * 4;
constexpr int64_t kSourceRows = 64;

TEST(SteadyHoldings, EachBufferFullAtItsStartingSize) {
  const Plan plan = testing::compiled_plan(spec("", "auto"));
  ASSERT_EQ(plan.stages.size(), 5u);
  // On 2 threads: the shuffle holds its input's whole pass (1,000 elements, fewer than its 10,000); the
  // auto map keeps its starting window of 4 chunks of 64 rows less the one it handed out; prefetch its
  // starting depth of 4 batches and the one its producer holds.
  const SteadyHoldings two = steady_holdings(plan, kSourceRows, nullptr, 2);
  EXPECT_TRUE(two.unknown.empty());
  EXPECT_EQ(two.bytes, 1000 * kElement + 3 * kSourceRows * kElement + 5 * 10 * kElement);
  // On 8 threads both start wider: a window of 16 and a depth of 16.
  const SteadyHoldings eight = steady_holdings(plan, kSourceRows, nullptr, 8);
  EXPECT_EQ(eight.bytes, 1000 * kElement + 15 * kSourceRows * kElement + 17 * 10 * kElement);
}

TEST(SteadyHoldings, FixedSizesAreTheSpecs) {
  const Plan plan = testing::compiled_plan(spec(", parallel = 3", "2"));
  const SteadyHoldings h = steady_holdings(plan, kSourceRows, nullptr, 8);
  EXPECT_EQ(h.bytes, 1000 * kElement + 2 * kSourceRows * kElement + 3 * 10 * kElement);
}

TEST(SteadyHoldings, ABufferOfByteStringsIsNamedNotCounted) {
  const Plan plan = testing::compiled_plan("pipeline data = files(\"*.txt\") | shuffle(4, seed = 1) | prefetch(2)\n");
  const SteadyHoldings h = steady_holdings(plan, kSourceRows, nullptr, 2);
  EXPECT_EQ(h.bytes, 0u);
  ASSERT_EQ(h.unknown.size(), 2u);
  EXPECT_EQ(h.unknown[0], "#1 shuffle");
  EXPECT_EQ(h.unknown[1], "#2 prefetch");
}

}  // namespace
}  // namespace pipec

// cache() after a pass that stops early (a take after it, with a repeat after that): whether the pass
// reached the end of its input depends on how far the stages after the cache read ahead, so on chunk
// sizes and threads. The elements must not: a later pass that reads the input again reads it as the
// first pass did (its epoch keys the random ops and shuffles upstream), so it gives what a replay would.
#include <gtest/gtest.h>

#include "runtime/exec/pipeline_run.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

std::vector<int64_t> run_ints(const std::string& text, int threads, int64_t chunk_rows) {
  Plan plan = testing::compiled_plan(text, "p", testing::lowered_only(), "cache.pipe");
  if (plan.stages.empty()) return {};
  RunOptions ro;
  ro.threads = threads;
  ro.chunk_rows = chunk_rows;
  PipelineRun run(plan, ro);
  std::vector<int64_t> out;
  Chunk c;
  while (run.next(c))
    for (int64_t r = 0; r < c.rows; ++r) out.push_back(column_row(c.columns.at(0), r).data<int64_t>()[0]);
  return out;
}

void expect_second_pass_repeats_the_first(const std::string& text, size_t per_pass) {
  std::vector<int64_t> reference;
  for (int threads : {1, 4})
    for (int64_t chunk_rows : {0, 1, 3}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, chunks of " << chunk_rows << " rows");
      std::vector<int64_t> got = run_ints(text, threads, chunk_rows);
      ASSERT_EQ(got.size(), 2 * per_pass);
      EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + per_pass),
                std::vector<int64_t>(got.begin() + per_pass, got.end()));
      if (reference.empty()) reference = got;
      EXPECT_EQ(got, reference);
    }
}

TEST(CachePass, RandomValuesUpstreamOfACacheCutShortAreTheFirstPasss) {
  expect_second_pass_repeats_the_first(
      "pipeline p = range(20) | map(r => { x: random_int([], 0, 1000000, seed = 3) }) | cache() | prefetch(2) | "
      "take(8) | repeat(2)\n",
      8);
}

TEST(CachePass, AShuffleUpstreamOfACacheCutShortKeepsItsOrder) {
  expect_second_pass_repeats_the_first(
      "pipeline p = range(30) | shuffle(30, seed = 5) | cache() | take(6) | repeat(2)\n", 6);
}

TEST(CachePass, ACompletePassIsReplayed) {
  expect_second_pass_repeats_the_first(
      "pipeline p = range(7) | map(r => { x: random_int([], 0, 1000000, seed = 3) }) | cache() | repeat(2)\n", 7);
}

// rejection_resample reads its input in several passes at once (the original and the filtered branch,
// and the estimate's): passes of one cache that overlap must not fill its store together. Each element
// then is what the same pipeline without the cache gives, for every chunk size and thread count, and a
// checkpoint taken after any element resumes exactly.
TEST(CachePass, PassesReadingACacheAtOnceGiveWhatTheInputGives) {
  const std::string resample =
      "rejection_resample(class_fn = r => r.value % 5, target_dist = [0.1, 0.2, 0.3, 0.2, 0.2], "
      "initial_dist = [0.2, 0.2, 0.2, 0.2, 0.2], seed = 7)";
  const std::string input = "range(40) | map(r => { value: r.value * 3 })";
  const testing::Elements uncached =
      testing::run_plan_text(testing::optimized_plan(input + " | " + resample + " | repeat(3)"), 1, 1);
  ASSERT_GT(uncached.size(), 30u);
  const Plan cached = testing::optimized_plan(input + " | cache() | " + resample + " | repeat(3)");
  for (int threads : {1, 4})
    for (int64_t chunk_rows : {1, 3, 64}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, chunks of " << chunk_rows << " rows");
      EXPECT_EQ(testing::run_plan_text(cached, chunk_rows, threads), uncached);
    }
  testing::expect_resumes_after_every_element(cached);
}

}  // namespace
}  // namespace pipec

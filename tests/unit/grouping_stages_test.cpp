// bucket_by_length and group_by_window: what they yield on small inputs, their run-time errors, the
// same stream whatever the threads and chunk sizes, and resuming from a checkpoint after every element
// continuing exactly as the run that never stopped. (What tf.data yields for the same pipelines, padding
// included, is pinned by the conformance fixtures bucket_by_length_* and group_by_window_*.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/cli_util.h"
#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;

Elements run(const std::string& pipeline) { return testing::run_plan_text(testing::optimized_plan(pipeline), 3); }

TEST(BucketByLength, BatchesEachBucketBySizeAndFlushesInBucketOrder) {
  // Lengths 0, 1, 2, 3, 4, 0, 1, ...: bucket 0 holds 0 and 1, bucket 1 holds 2 and 3, bucket 2 the rest;
  // a bucket is batched as soon as it holds its batch size.
  EXPECT_EQ(
      run("range(10) | bucket_by_length(length = r => r.value % 5, boundaries = [2, 4], batch_sizes = [3, 2, 4])"),
      (Elements{"value=[2,3]", "value=[0,1,5]", "value=[7,8]", "value=[6]", "value=[4,9]"}));
  EXPECT_EQ(run("range(10) | bucket_by_length(length = r => r.value % 5, boundaries = [2, 4], batch_sizes = [3, 2, 4], "
                "drop_remainder = true)"),
            (Elements{"value=[2,3]", "value=[0,1,5]", "value=[7,8]"}));
  // One bucket: batch().
  EXPECT_EQ(run("range(5) | bucket_by_length(length = r => r.value, boundaries = [], batch_sizes = [2])"),
            (Elements{"value=[0,1]", "value=[2,3]", "value=[4]"}));
  EXPECT_TRUE(
      run("range(0) | bucket_by_length(length = r => r.value, boundaries = [3], batch_sizes = [2, 2])").empty());
}

TEST(BucketByLength, LengthsOutsideTheI32RangeAreAnErrorNamingTheStage) {
  try {
    run("range(3) | bucket_by_length(length = r => r.value * 3000000000, boundaries = [3], batch_sizes = [2, 2])");
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "bucket_by_length");
    EXPECT_NE(std::string(e.what()).find("an element's length is 3000000000, outside the buckets' range"),
              std::string::npos)
        << e.what();
  }
}

TEST(BucketByLength, PadToBucketBoundaryFailsForTheLastBucketAfterTheBatchesBeforeIt) {
  const Plan plan = testing::optimized_plan(
      "range(6) | bucket_by_length(length = r => r.value, boundaries = [4], batch_sizes = [2, 5], "
      "pad_to_bucket_boundary = true)");
  PipelineRun run(plan, testing::run_options(2));
  Elements got;
  try {
    Chunk c;
    while (run.next(c))
      for (int64_t r = 0; r < c.rows; ++r) got.push_back(testing::row_text(c, r, plan.stages.back().element));
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "bucket_by_length");
    EXPECT_NE(std::string(e.what()).find("must be less than the last boundary (4)"), std::string::npos) << e.what();
  }
  // The first bucket's batches come out; 4 and 5, in the last bucket, fail when it is padded at the end.
  EXPECT_EQ(got, (Elements{"value=[0,1]", "value=[2,3]"}));
}

TEST(BucketByLength, TheRunSummaryGivesThePaddingSavedAgainstPaddedBatch) {
  testing::ScratchDir d;
  // Lengths 1, 7, 2, 7, 1, 5 in buckets below 4 and from 4, three a batch: [1, 2, 1] pads to 2 (4 tokens
  // in 6 slots), [7, 7, 5] to 7 (19 in 21): 4 padding slots of 27. padded_batch(3) over the same order
  // makes [1, 7, 2] and [7, 1, 5], both padded to 7: 23 tokens in 42 slots, 19 of them padding.
  testing::write_file(d / "p.pipe",
                      "pipeline p = range(6) | map(r => { t: [0, 1, 2, 3, 4, 5, 6][0:[1, 7, 2, 7, 1, 5][r.value]] }) "
                      "| bucket_by_length(length = r => size(r.t), boundaries = [4], batch_sizes = [3, 3])\n");
  auto r = testing::run_pipec({"run", (d / "p.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("padding     #2 bucket_by_length: 14.8% of 27 token slots are padding; padded_batch(3) would "
                       "pad 45.2% of 42: 15 padding slots saved (78.9%)"),
            std::string::npos)
      << r.err;
  const auto json = nlohmann::json::parse(testing::read_all(d / "s.json"));
  const auto& bucket = json.at("stages").at(2);
  ASSERT_EQ(bucket.at("op"), "bucket_by_length");
  EXPECT_EQ(bucket.at("padding").at("tokens"), 23);
  EXPECT_EQ(bucket.at("padding").at("slots"), 27);
  EXPECT_EQ(bucket.at("padding").at("padded_batch_size"), 3);
  EXPECT_EQ(bucket.at("padding").at("padded_batch_tokens"), 23);
  EXPECT_EQ(bucket.at("padding").at("padded_batch_slots"), 42);
  EXPECT_EQ(bucket.at("padding").at("slots_saved"), 15);
  EXPECT_FALSE(json.at("stages").at(1).contains("padding"));
  // pad_to_bucket_boundary pads every batch of the first bucket to 3: [1, 2, 1] takes 9 slots.
  testing::write_file(d / "q.pipe",
                      "pipeline p = range(4) | map(r => { t: [0, 1, 2, 3, 4, 5, 6][0:[1, 2, 1, 3][r.value]] }) "
                      "| bucket_by_length(length = r => size(r.t), boundaries = [4], batch_sizes = [2, 2], "
                      "pad_to_bucket_boundary = true)\n");
  r = testing::run_pipec({"run", (d / "q.pipe").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Batches [1, 2] and [1, 3], each 2 x 3 slots: 7 tokens in 12; padded_batch(2): 2 x 2 + 2 x 3 = 10.
  EXPECT_NE(r.err.find("padding     #2 bucket_by_length: 41.7% of 12 token slots are padding; padded_batch(2) would "
                       "pad 30.0% of 10: -2 padding slots saved (-66.7%)"),
            std::string::npos)
      << r.err;
}

TEST(GroupByWindow, ReducesFullWindowsAtOnceAndTheRestByIncreasingKey) {
  // tf.data's own example (group_by_window_test.py): the small windows at the end come in key order.
  EXPECT_EQ(run("range(12) | map(r => { x: [0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0][r.value] }) | group_by_window(key = "
                "r => r.x, window_size = 4, reduce = w => w | batch(4))"),
            (Elements{"x=[0,0,0,0]", "x=[1,1,1,1]", "x=[0,0,0]", "x=[1]"}));
  // A window of 5 batched by 2: three batches per full window.
  EXPECT_EQ(
      run("range(12) | group_by_window(key = r => r.value % 2, window_size = 5, reduce = (k, w) => w | batch(2))"),
      (Elements{"value=[0,2]", "value=[4,6]", "value=[8]", "value=[1,3]", "value=[5,7]", "value=[9]", "value=[10]",
                "value=[11]"}));
  EXPECT_EQ(run("range(12) | group_by_window(key = r => r.value % 2 - 1, window_size = 5, reduce = w => w | batch(2, "
                "drop_remainder = true))"),
            (Elements{"value=[0,2]", "value=[4,6]", "value=[1,3]", "value=[5,7]"}));
  // Any integer key (tf.data's must be an int64).
  EXPECT_EQ(run("range(5) | group_by_window(key = r => i8(r.value % 2), window_size = 2, reduce = w => w | batch(2))"),
            (Elements{"value=[0,2]", "value=[1,3]", "value=[4]"}));
}

TEST(GroupingStages, ThreadsAndChunkSizesDoNotChangeThem) {
  for (const std::string& pipeline : {
           std::string("range(200) | map(r => { v: r.value, u: random_uniform([3]) }) | bucket_by_length(length = r "
                       "=> i32(r.u[0] * 10.0), boundaries = [3, 6], batch_sizes = [4, 5, 3])"),
           std::string("range(200) | group_by_window(key = r => i64(random_uniform([], seed = 5) * 4.0), window_size "
                       "= 6, reduce = w => w | batch(4))"),
       }) {
    SCOPED_TRACE(pipeline);
    const Plan plan = testing::optimized_plan(pipeline);
    const Elements want = testing::run_plan_text(plan, 1, 1);
    EXPECT_EQ(testing::run_plan_text(plan, 7, 4), want);
    EXPECT_EQ(testing::run_plan_text(plan, 1000, 2), want);
  }
}

TEST(GroupingStages, ResumeAfterEveryElementContinuesExactly) {
  const std::vector<std::string> cases = {
      "range(30) | bucket_by_length(length = r => r.value % 7, boundaries = [2, 5], batch_sizes = [3, 2, 4])",
      "range(9) | repeat(3) | bucket_by_length(length = r => r.value, boundaries = [4], batch_sizes = [3, 2], "
      "drop_remainder = true) | map(r => { s: sum(r.value), u: random_uniform([]) })",
      "range(25) | group_by_window(key = r => r.value % 4, window_size = 3, reduce = w => w | batch(2))",
      "range(6) | repeat(4) | group_by_window(key = r => r.value % 3, window_size = 5, reduce = (k, w) => w | "
      "batch(5, drop_remainder = true))",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(testing::optimized_plan(pipeline));
  }
}

}  // namespace
}  // namespace pipec

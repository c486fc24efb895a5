// concatenate, choose_from, sample_from and enumerate: what they yield on small inputs, choose_from's
// run-time error for an index that names no dataset, sample_from's seeds, and resuming from a checkpoint after every
// element (in the first dataset, at a boundary, in the next) continuing exactly as the run that never stopped.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;
using testing::row_text;

RunOptions options(int64_t chunk_rows) { return testing::run_options(chunk_rows); }
Plan optimized(const std::string& pipeline) { return testing::optimized_plan(pipeline); }
Elements run_all(const Plan& plan, int64_t chunk_rows) { return testing::run_plan_text(plan, chunk_rows); }
Elements run(const std::string& pipeline) { return run_all(optimized(pipeline), 3); }

TEST(Concatenate, YieldsTheFirstDatasetThenTheNext) {
  EXPECT_EQ(run("concatenate(range(2), range(10, 13), range(0), range(7, 8))"),
            (Elements{"value=0", "value=1", "value=10", "value=11", "value=12", "value=7"}));
  EXPECT_EQ(run("concatenate(range(0), range(2))"), (Elements{"value=0", "value=1"}));
  EXPECT_EQ(run("concatenate(range(2), range(0))"), (Elements{"value=0", "value=1"}));
  EXPECT_TRUE(run("concatenate(range(0), range(0))").empty());
}

// The second dataset's fields in another order come out in the first's order; differing dimensions
// (a remainder batch, here a batch of 2 and one of 1) stay each element's own.
TEST(Concatenate, MatchesFieldsByNameAndKeepsEachElementsShape) {
  EXPECT_EQ(run("concatenate(range(2) | map(r => { a: r.value, b: f32(r.value) }), "
                "range(5, 6) | map(r => { b: f32(0.5), a: r.value }))"),
            (Elements{"a=0 b=0", "a=1 b=1", "a=5 b=0.5"}));
  EXPECT_EQ(run("concatenate(range(4) | batch(2, drop_remainder = true), range(3) | batch(2))"),
            (Elements{"value=[0,1]", "value=[2,3]", "value=[0,1]", "value=[2]"}));
}

TEST(Enumerate, AddsThePositionAsTheFirstField) {
  EXPECT_EQ(run("range(10, 13) | enumerate()"), (Elements{"index=0 value=10", "index=1 value=11", "index=2 value=12"}));
  EXPECT_EQ(run("range(5) | batch(2) | enumerate(start = -1, field = \"n\")"),
            (Elements{"n=-1 value=[0,1]", "n=0 value=[2,3]", "n=1 value=[4]"}));
  // Built again for each pass of the repeat after it: the count restarts, as tf.data's does.
  EXPECT_EQ(run("range(2) | enumerate() | repeat(2)"),
            (Elements{"index=0 value=0", "index=1 value=1", "index=0 value=0", "index=1 value=1"}));
  EXPECT_EQ(run("range(2) | repeat(2) | enumerate()"),
            (Elements{"index=0 value=0", "index=1 value=1", "index=2 value=0", "index=3 value=1"}));
}

const std::string kIndex = "range(7) | map(r => { i: r.value % 3 % 2 })";  // 0 1 0 0 1 0 0

TEST(ChooseFrom, TakesTheNextElementOfTheDatasetEachIndexNames) {
  EXPECT_EQ(run("choose_from([range(10, 20), range(20, 30)], " + kIndex + ")"),
            (Elements{"value=10", "value=20", "value=11", "value=12", "value=21", "value=13", "value=14"}));
  // The index pipeline ends the output.
  EXPECT_EQ(run("choose_from([range(10, 20)], range(2) | map(r => { i: r.value * 0 }))"),
            (Elements{"value=10", "value=11"}));
}

// tf.data's stop_on_empty_dataset: by default the output ends at the first index that names a dataset
// that has ended; with false that index is skipped, and the output ends when every dataset has.
TEST(ChooseFrom, StopsOnAnEmptyDatasetOrSkipsIt) {
  const std::string datasets = "[range(10, 13), range(20, 22)]";
  const std::string index = "range(12) | map(r => { i: r.value % 2 })";  // 0 1 0 1 0 1 ...
  EXPECT_EQ(run("choose_from(" + datasets + ", " + index + ")"),
            (Elements{"value=10", "value=20", "value=11", "value=21", "value=12"}));
  EXPECT_EQ(run("choose_from(" + datasets + ", " + index + ", stop_on_empty = false)"),
            (Elements{"value=10", "value=20", "value=11", "value=21", "value=12"}));
  EXPECT_EQ(run("choose_from([range(10, 11), range(20, 24)], " + index + ", stop_on_empty = false)"),
            (Elements{"value=10", "value=20", "value=21", "value=22", "value=23"}));
  EXPECT_TRUE(run("choose_from([range(0), range(20, 24)], " + index + ")").empty());
}

TEST(ChooseFrom, AnIndexThatNamesNoDatasetIsAnErrorNamingIt) {
  Plan plan = optimized("choose_from([range(10, 20), range(20, 30)], range(4) | map(r => { i: r.value * 2 - 1 }))");
  try {
    run_all(plan, 3);
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "choose_from");
    EXPECT_NE(std::string(e.what()).find("element 0 of the index pipeline is -1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[0, 1]"), std::string::npos) << e.what();
  }
  plan = optimized("choose_from([range(10, 20), range(20, 30)], range(4) | map(r => { i: r.value }))");
  try {
    run_all(plan, 3);
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_NE(std::string(e.what()).find("element 2 of the index pipeline is 2"), std::string::npos) << e.what();
  }
}

// The pinned orders are TensorFlow's (the sample_from_* conformance fixtures check more).
TEST(SampleFrom, DrawsTensorFlowsChoices) {
  // sample_from_datasets([range(10, 13), range(20, 23)], [0.3, 0.7], seed = 5): choices 0 0 0 1 1 0 ...
  EXPECT_EQ(run("sample_from([range(10, 13), range(20, 23)], weights = [0.3, 0.7], seed = 5)"),
            (Elements{"value=10", "value=11", "value=12", "value=20", "value=21", "value=22"}));
  // stop_on_empty: the fourth choice names the first dataset, which has ended.
  EXPECT_EQ(run("sample_from([range(10, 13), range(20, 23)], weights = [0.3, 0.7], seed = 5, stop_on_empty = true)"),
            (Elements{"value=10", "value=11", "value=12", "value=20", "value=21"}));
  // A dataset of weight 0 is never read, and the choices are those of the others alone.
  EXPECT_EQ(run("sample_from([range(10, 13), range(50, 60), range(20, 23)], "
                "weights = [0.3, 0, 0.7], seed = 5, stop_on_empty = true)"),
            (Elements{"value=10", "value=11", "value=12", "value=20", "value=21"}));
}

// Without a seed of its own it draws with the run's: the same run seed gives the same order whatever
// the thread count, another seed another order.
TEST(SampleFrom, WithoutASeedTheRunSeedDecides) {
  const Plan plan = optimized("sample_from([range(100), range(100, 200)]) | batch(7)");
  auto with = [&](uint64_t seed, int threads) {
    RunOptions o = options(5);
    o.seed = seed;
    o.threads = threads;
    Elements out;
    PipelineRun r(plan, o);
    Chunk c;
    while (r.next(c))
      for (int64_t i = 0; i < c.rows; ++i) out.push_back(row_text(c, i, plan.stages.back().element));
    return out;
  };
  const Elements a = with(3, 1);
  EXPECT_EQ(with(3, 4), a);
  EXPECT_NE(with(4, 2), a);
  EXPECT_EQ(a.size(), 29u);  // 200 elements in batches of 7
}

// Resuming from a checkpoint after every element continues exactly, for every position of short cases.
TEST(MixingStages, ResumeAfterEveryElementContinuesExactly) {
  const std::vector<std::string> cases = {
      "concatenate(range(3), range(10, 14))",
      "concatenate(range(0), range(10, 13) | map(r => { value: r.value * 2 }) | filter(r => r.value != 11))",
      "concatenate(range(3) | shuffle(2, seed = 4), range(0), range(5, 7) | batch(1) | unbatch())",
      "concatenate(range(4), range(10, 14)) | batch(3) | enumerate(start = 7)",
      "concatenate(range(5) | repeat(2), range(3)) | map(r => { v: r.value, u: random_uniform([2]) })",
      "choose_from([range(10, 14), range(20, 26), range(30, 31)], range(14) | map(r => { i: r.value * 5 % 3 }))",
      "choose_from([range(10, 14), range(20, 26), range(30, 31)], range(14) | map(r => { i: r.value * 5 % 3 }), "
      "stop_on_empty = false)",
      "range(3) | enumerate() | repeat(3) | enumerate(field = \"outer\")",
      "sample_from([range(10, 16), range(20, 23), range(30, 34)], weights = [0.5, 0.2, 0.3], seed = 9)",
      "sample_from([range(10, 16), range(0), range(20, 25) | repeat(2)], weights = [1, 0, 2], stop_on_empty = true) | "
      "repeat(2)",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(optimized(pipeline));
  }
}

}  // namespace
}  // namespace pipec

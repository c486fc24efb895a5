// flat_map and interleave with a function: the elements they yield (tf.data's order, the expected
// lists are what TensorFlow 2.21 gives), that the order does not depend on chunking or threads, that a
// checkpoint after any element resumes exactly (the input's position and every open inner pipeline's),
// the plan's inner pipeline through serialization and the verifier, and the run-time errors.
#include <gtest/gtest.h>

#include "runtime/exec/footprint.h"
#include "runtime/plan/plan_serialize.h"
#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;

Plan optimized(const std::string& pipeline) { return testing::optimized_plan(pipeline); }
Elements run(const std::string& pipeline, int64_t chunk_rows = 3, int threads = 2) {
  return testing::run_plan_text(optimized(pipeline), chunk_rows, threads);
}

TEST(FlatMap, YieldsEveryElementOfEachElementsDatasetInTurn) {
  // tf.data.Dataset.range(5).flat_map(lambda v: Dataset.range(v)): the first dataset is empty.
  EXPECT_EQ(run("range(5) | flat_map(r => range(r.value))"),
            (Elements{"value=0", "value=0", "value=1", "value=0", "value=1", "value=2", "value=0", "value=1", "value=2",
                      "value=3"}));
  // Stages in the inner pipeline run per element: Dataset.range(1, 5).flat_map(lambda v: range(v).batch(2)).
  EXPECT_EQ(run("range(1, 5) | flat_map(r => range(r.value) | batch(2))"),
            (Elements{"value=[0]", "value=[0,1]", "value=[0,1]", "value=[2]", "value=[0,1]", "value=[2,3]"}));
  EXPECT_TRUE(run("range(0) | flat_map(r => range(r.value))").empty());
  EXPECT_TRUE(run("range(4) | flat_map(r => range(0))").empty());
}

TEST(FlatMap, AnInnerPipelineWithoutTheElementIsTheSameForEach) {
  EXPECT_EQ(run("range(3) | flat_map(r => range(7, 9) | map(x => { y: x.value * 2 }))"),
            (Elements{"y=14", "y=16", "y=14", "y=16", "y=14", "y=16"}));
}

TEST(FlatMap, BindsFieldsOfAnyIntegerTypeAndByteStrings) {
  EXPECT_EQ(run("range(2, 4) | map(r => { n: i32(r.value) }) | flat_map(r => range(r.n))"),
            (Elements{"value=0", "value=1", "value=0", "value=1", "value=2"}));
}

TEST(Interleave, TakesBlocksFromCycleLengthOpenDatasets) {
  // Dataset.range(1, 4).interleave(lambda v: range(v), cycle_length=2)
  EXPECT_EQ(run("range(1, 4) | interleave(r => range(r.value), cycle_length = 2)"),
            (Elements{"value=0", "value=0", "value=1", "value=0", "value=1", "value=2"}));
  // Dataset.range(1, 5).interleave(lambda v: range(10 v, 10 v + v), cycle_length=2, block_length=2)
  EXPECT_EQ(run("range(1, 5) | map(r => { lo: r.value * 10, hi: r.value * 11 }) | "
                "interleave(r => range(r.lo, r.hi), cycle_length = 2, block_length = 2)"),
            (Elements{"value=10", "value=20", "value=21", "value=30", "value=31", "value=32", "value=40", "value=41",
                      "value=42", "value=43"}));
  // A cycle longer than the input: Dataset.range(3).interleave(lambda v: range(10 v, 10 v + 2), cycle_length=5)
  EXPECT_EQ(run("range(3) | map(r => { lo: r.value * 10, hi: r.value * 10 + 2 }) | "
                "interleave(r => range(r.lo, r.hi), cycle_length = 5)"),
            (Elements{"value=0", "value=10", "value=20", "value=1", "value=11", "value=21"}));
}

// The order is the data's: chunks of 1 or 64 rows, 1 or 8 threads give the same stream.
TEST(Interleave, TheOrderDependsOnNeitherChunksNorThreads) {
  const std::string p =
      "range(40) | map(r => { lo: r.value * 100, hi: r.value * 100 + r.value % 5 }) | "
      "interleave(r => range(r.lo, r.hi) | map(x => { v: x.value, u: random_uniform([]) }), cycle_length = 3, "
      "block_length = 2) | map(r => { v: r.v * 2, u: r.u })";
  const Elements want = run(p, 1, 1);
  ASSERT_EQ(want.size(), 80u);  // 8 rounds of lengths 0, 1, 2, 3, 4
  EXPECT_EQ(run(p, 64, 8), want);
  EXPECT_EQ(run(p, 5, 3), want);
}

TEST(FlatMap, ResumeAfterEveryElementContinuesExactly) {
  const std::vector<std::string> cases = {
      "range(5) | flat_map(r => range(r.value))",
      "range(1, 6) | flat_map(r => range(r.value) | batch(2)) | repeat(2)",
      "range(1, 9) | map(r => { lo: r.value * 10, hi: r.value * 10 + r.value % 4 }) | "
      "interleave(r => range(r.lo, r.hi), cycle_length = 3, block_length = 2)",
      "range(1, 5) | interleave(r => range(r.value) | shuffle(3, seed = 2) | map(x => { v: x.value, u: "
      "random_uniform([2]) }), cycle_length = 8)",
      "range(3) | repeat(2) | interleave(r => range(r.value) | repeat(2), cycle_length = 2, block_length = 3) | "
      "enumerate()",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(optimized(pipeline));
  }
}

// The inner pipeline travels in a serialized plan (what `pipec build` embeds) and the verifier checks it.
TEST(FlatMap, TheInnerPipelineSurvivesSerializationAndIsVerified) {
  Plan plan = optimized("range(1, 4) | interleave(r => range(r.value) | take(2), cycle_length = 2)");
  const std::string text = print_plan(plan);
  EXPECT_NE(text.find("range(start_or_stop = element.value)"), std::string::npos) << text;
  Plan back = decode_plan(encode_plan(plan), "test");
  EXPECT_EQ(print_plan(back), text);
  EXPECT_EQ(testing::run_plan_text(back, 2), testing::run_plan_text(plan, 2));
  EXPECT_TRUE(verify_plan(plan).empty());

  for (Stage& s : plan.stages)
    if (s.kind == StageKind::FlatMap) {
      Plan wrong = *s.inner;
      wrong.stages.back().element.fields.clear();
      s.inner = std::make_shared<const Plan>(wrong);
    }
  const std::vector<std::string> errs = verify_plan(plan);
  ASSERT_FALSE(errs.empty());
  EXPECT_NE(errs[0].find("its element is not its inner pipeline's"), std::string::npos) << errs[0];
}

// The plan cannot tell how many elements it yields (the footprint's pass length), and its chunks are
// filled from its inner pipelines however few rows the input's chunks hold.
TEST(FlatMap, ItsLengthIsUnknownAndItsChunksAreFull) {
  Plan plan = optimized("range(5) | batch(2) | flat_map(r => range(7))");
  int at = -1;
  for (size_t i = 0; i < plan.stages.size(); ++i)
    if (plan.stages[i].kind == StageKind::FlatMap) at = static_cast<int>(i);
  ASSERT_GE(at, 0);
  EXPECT_EQ(pass_length(plan, 0, {}), 5);
  EXPECT_FALSE(pass_length(plan, at, {}).has_value());
  EXPECT_EQ(rows_per_chunk(plan, at, 64), 64);
}

TEST(FlatMap, ARangeStepOfZeroFromAnElementIsAnErrorNamingTheStage) {
  Plan plan = optimized("range(3) | map(r => { s: r.value - 1 }) | flat_map(r => range(0, 5, r.s))");
  try {
    testing::run_plan_text(plan, 4);
    FAIL() << "a step of 0 ran";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "flat_map");
    EXPECT_NE(std::string(e.what()).find("an element gives range a step of 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipec

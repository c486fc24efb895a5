// window, scan and rebatch: what they yield on small inputs, their run-time errors, and resuming from a
// checkpoint after every element continuing exactly as the run that never stopped. (What tf.data
// yields for the same pipelines is pinned by the conformance fixtures window_*, scan_*, rebatch_*.)
#include <gtest/gtest.h>

#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;

Elements run(const std::string& pipeline) { return testing::run_plan_text(testing::optimized_plan(pipeline), 3); }

TEST(Window, StacksShiftedAndStridedWindows) {
  EXPECT_EQ(run("range(7) | window(3, shift = 2)"),
            (Elements{"value=[0,1,2]", "value=[2,3,4]", "value=[4,5,6]", "value=[6]"}));
  EXPECT_EQ(run("range(7) | window(3, shift = 2, drop_remainder = true)"),
            (Elements{"value=[0,1,2]", "value=[2,3,4]", "value=[4,5,6]"}));
  EXPECT_EQ(run("range(6) | window(3, shift = 1, stride = 2)"),
            (Elements{"value=[0,2,4]", "value=[1,3,5]", "value=[2,4]", "value=[3,5]", "value=[4]", "value=[5]"}));
  // A shift past the window passes over the elements between.
  EXPECT_EQ(run("range(13) | window(2, shift = 5)"), (Elements{"value=[0,1]", "value=[5,6]", "value=[10,11]"}));
  EXPECT_EQ(run("range(3) | window(5)"), (Elements{"value=[0,1,2]"}));
  EXPECT_TRUE(run("range(3) | window(5, drop_remainder = true)").empty());
  EXPECT_TRUE(run("range(0) | window(2)").empty());
}

// A batch size no machine holds (batch(1 << 40) of 8-byte rows: 8 TiB) is an error naming the stage and
// its size, raised before anything is allocated.
TEST(Batch, ASizeBeyondTheMachinesMemoryIsAnErrorNamingTheStage) {
  try {
    run("range(10) | batch(1 << 40)");
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "batch");
    EXPECT_NE(std::string(e.what()).find("a batch of 1099511627776 elements of 8 bytes each needs"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(run("range(3) | batch(1 << 20)"), (Elements{"value=[0,1,2]"}));
}

TEST(Window, ElementsOfDifferentShapesAreAnErrorNamingTheStage) {
  try {
    run("range(5) | batch(2) | window(3)");
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "window");
    EXPECT_NE(std::string(e.what()).find("the elements of a window have different shapes ([2] and [1])"),
              std::string::npos)
        << e.what();
  }
}

TEST(Rebatch, RegroupsTheRowsOfBatches) {
  EXPECT_EQ(run("range(7) | batch(3) | rebatch(2)"),
            (Elements{"value=[0,1]", "value=[2,3]", "value=[4,5]", "value=[6]"}));
  EXPECT_EQ(run("range(7) | batch(3) | rebatch(2, drop_remainder = true)"),
            (Elements{"value=[0,1]", "value=[2,3]", "value=[4,5]"}));
  EXPECT_EQ(run("range(5) | batch(2) | rebatch(4)"), (Elements{"value=[0,1,2,3]", "value=[4]"}));
}

TEST(Scan, CarriesTheStateFromElementToElement) {
  EXPECT_EQ(run("range(1, 5) | scan({ total: 0 }, (s, r) => { total: s.total + r.value, value: r.value })"),
            (Elements{"total=1 value=1", "total=3 value=2", "total=6 value=3", "total=10 value=4"}));
  // A state of a vector; the output need not hold anything else.
  EXPECT_EQ(run("range(4) | scan({ h: [0, 0] }, (s, r) => { h: [s.h[1], r.value] })"),
            (Elements{"h=[0,0]", "h=[0,1]", "h=[1,2]", "h=[2,3]"}));
  // Built again for each pass of a repeat after it: the state starts over, as tf.data's does.
  EXPECT_EQ(run("range(3) | scan({ n: 0 }, (s, r) => { n: s.n + 1 }) | repeat(2)"),
            (Elements{"n=1", "n=2", "n=3", "n=1", "n=2", "n=3"}));
}

// The compiled kernel and the interpreter carry the same state: -O0 without the JIT against the JIT.
TEST(Scan, ThreadsAndChunkSizesDoNotChangeIt) {
  const Plan plan = testing::optimized_plan(
      "range(40) | scan({ m: 0.0, k: 7 }, (s, r) => { m: 0.5 * s.m + f64(r.value), k: s.k * 3 % 101, u: "
      "random_uniform([]) })");
  const Elements want = testing::run_plan_text(plan, 1, 1);
  EXPECT_EQ(testing::run_plan_text(plan, 7, 4), want);
  EXPECT_EQ(testing::run_plan_text(plan, 1000, 2), want);
}

TEST(Scan, AnErrorInTheFunctionNamesTheStage) {
  try {
    // The third element indexes the state's vector of two out of range.
    run("range(5) | scan({ h: [1, 2] }, (s, r) => { h: s.h, x: s.h[r.value] })");
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "scan");
    EXPECT_NE(std::string(e.what()).find("2"), std::string::npos) << e.what();
  }
}

TEST(StructureStages, ResumeAfterEveryElementContinuesExactly) {
  const std::vector<std::string> cases = {
      "range(9) | window(3, shift = 2)",
      "range(20) | window(4, shift = 1, stride = 3)",
      "range(15) | window(2, shift = 5, drop_remainder = true) | map(r => { s: sum(r.value), u: random_uniform([]) })",
      "range(5) | repeat(3) | window(4, shift = 3)",
      "range(13) | batch(4) | rebatch(3)",
      "range(3) | repeat(3) | batch(2) | rebatch(5, drop_remainder = true)",
      "range(12) | scan({ t: 0, h: [0.0, 0.0] }, (s, r) => { t: s.t + r.value, h: [s.h[1], f64(r.value)], u: "
      "random_uniform([]) })",
      "range(4) | scan({ n: 0 }, (s, r) => { n: s.n + r.value }) | repeat(3) | shuffle(3, seed = 1)",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(testing::optimized_plan(pipeline));
  }
}

}  // namespace
}  // namespace pipec

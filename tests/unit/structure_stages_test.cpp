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

TEST(StructureStages, ResumeAfterEveryElementContinuesExactly) {
  const std::vector<std::string> cases = {
      "range(9) | window(3, shift = 2)",
      "range(20) | window(4, shift = 1, stride = 3)",
      "range(15) | window(2, shift = 5, drop_remainder = true) | map(r => { s: sum(r.value), u: random_uniform([]) })",
      "range(5) | repeat(3) | window(4, shift = 3)",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(testing::optimized_plan(pipeline));
  }
}

}  // namespace
}  // namespace pipec

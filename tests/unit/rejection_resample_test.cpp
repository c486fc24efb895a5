// rejection_resample: the branches tf.data builds for each initial distribution, the run-time error for
// a class outside target_dist, the same stream whatever the threads and chunk sizes, each pass of a
// repeat after it the same, and resuming from a checkpoint after every element continuing exactly as the
// run that never stopped. (That the elements are tf.data's, draw for draw, is pinned by the conformance
// fixtures rejection_resample_*.)
#include <gtest/gtest.h>

#include <map>

#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;

Elements run(const std::string& pipeline) { return testing::run_plan_text(testing::optimized_plan(pipeline), 3); }

Elements range_text(int64_t n) {
  Elements out;
  for (int64_t i = 0; i < n; ++i) out.push_back("value=" + std::to_string(i));
  return out;
}

TEST(RejectionResample, AnInitialDistributionEqualToTheTargetLeavesTheInputUnchanged) {
  // min(target / initial) is 1: tf.data hands on the input as it is, without a draw.
  EXPECT_EQ(run("range(50) | rejection_resample(class_fn = r => r.value % 2, target_dist = [0.5, 0.5], "
                "initial_dist = [0.5, 0.5], seed = 1)"),
            range_text(50));
}

TEST(RejectionResample, ATargetOfZeroNeverYieldsThatClass) {
  for (const char* initial : {"", ", initial_dist = [0.25, 0.25, 0.5]"}) {
    SCOPED_TRACE(initial);
    const Elements got = run(std::string("range(300) | rejection_resample(class_fn = r => r.value % 3, target_dist = "
                                         "[0.0, 0.5, 0.5]") +
                             initial + ", seed = 4)");
    ASSERT_FALSE(got.empty());
    for (const std::string& e : got) EXPECT_NE(std::stoll(e.substr(6)) % 3, 0) << e;
  }
}

TEST(RejectionResample, TheOutputFollowsTheTarget) {
  // 3000 elements, classes 0, 1, 2 equally often, resampled to 0.1 / 0.3 / 0.6: each share within five
  // standard deviations.
  const Elements got =
      run("range(3000) | rejection_resample(class_fn = r => r.value % 3, target_dist = [0.1, 0.3, "
          "0.6], initial_dist = [0.3333333, 0.3333333, 0.3333334], seed = 8)");
  std::map<int64_t, int> count;
  for (const std::string& e : got) ++count[std::stoll(e.substr(6)) % 3];
  const double n = static_cast<double>(got.size()), p[3] = {0.1, 0.3, 0.6};
  ASSERT_GT(n, 1000);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(count[k], n * p[k], 5 * std::sqrt(n * p[k] * (1 - p[k]))) << "class " << k;
}

TEST(RejectionResample, AClassOutsideTheTargetIsAnErrorNamingTheStageAndTheElement) {
  try {
    run("range(40) | rejection_resample(class_fn = r => r.value // 9, target_dist = [0.2, 0.3, 0.5], seed = 2)");
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "rejection_resample");
    // Element 27 is the first of class 3 (27 // 9).
    EXPECT_NE(std::string(e.what()).find("element 27 of the input has class 3, outside [0, 3)"), std::string::npos)
        << e.what();
  }
}

TEST(RejectionResample, ThreadsAndChunkSizesDoNotChangeIt) {
  for (const std::string& pipeline : {
           std::string("range(500) | map(r => { v: r.value, c: i32(random_uniform([], seed = 3) * 4.0) }) | "
                       "rejection_resample(class_fn = r => r.c, target_dist = [0.4, 0.3, 0.2, 0.1], seed = 9)"),
           std::string("range(500) | rejection_resample(class_fn = r => r.value % 2, target_dist = [0.8, 0.2], "
                       "initial_dist = [0.5, 0.5], seed = 9)"),
       }) {
    SCOPED_TRACE(pipeline);
    const Plan plan = testing::optimized_plan(pipeline);
    const Elements want = testing::run_plan_text(plan, 1, 1);
    EXPECT_EQ(testing::run_plan_text(plan, 7, 4), want);
    EXPECT_EQ(testing::run_plan_text(plan, 1000, 2), want);
  }
}

TEST(RejectionResample, EveryPassOfARepeatAfterItIsTheSame) {
  const Elements once =
      run("range(100) | rejection_resample(class_fn = r => r.value % 3, target_dist = [0.6, 0.2, "
          "0.2], seed = 5)");
  Elements twice = once;
  twice.insert(twice.end(), once.begin(), once.end());
  EXPECT_EQ(run("range(100) | rejection_resample(class_fn = r => r.value % 3, target_dist = [0.6, 0.2, 0.2], seed = "
                "5) | repeat(2)"),
            twice);
}

TEST(RejectionResample, ResumeAfterEveryElementContinuesExactly) {
  const std::vector<std::string> cases = {
      // Estimated: the estimates' batches of 32 cross the checkpoints.
      "range(90) | rejection_resample(class_fn = r => r.value % 3, target_dist = [0.5, 0.3, 0.2], seed = 6)",
      // Mixed with a given initial distribution, after a repeat (each pass its own branches).
      "range(30) | repeat(3) | rejection_resample(class_fn = r => r.value % 2, target_dist = [0.8, 0.2], "
      "initial_dist = [0.5, 0.5], seed = 1)",
      // The filtered branch alone (min(target / initial) = 0), with a random op after it.
      "range(60) | rejection_resample(class_fn = r => r.value % 3, target_dist = [0.0, 0.5, 0.5], initial_dist = "
      "[0.2, 0.4, 0.4], seed = 3) | map(r => { v: r.value, u: random_uniform([]) })",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(testing::optimized_plan(pipeline));
  }
}

}  // namespace
}  // namespace pipec

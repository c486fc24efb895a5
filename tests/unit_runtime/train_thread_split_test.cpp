// The split of a training run's pool workers between its input pipeline and the trainer's compute
// (runtime/train/loop/thread_split.h): a pipeline that keeps ahead gives workers to the compute down to
// one; a model that waits for input gets them back; between the two thresholds nothing moves; and
// each state has its sentence with the measured share.
#include "runtime/train/loop/thread_split.h"

#include <gtest/gtest.h>

namespace pipec {
namespace {

// Feeds `steps` steps of `seconds` each, waiting `share` of it; returns how many changed the split.
int feed(ThreadSplit& s, int steps, double seconds, double share) {
  int changed = 0;
  for (int i = 0; i < steps; ++i) changed += s.note_step(share * seconds, seconds);
  return changed;
}

TEST(ThreadSplit, APipelineThatKeepsAheadGivesWorkersToTheComputeDownToOne) {
  ThreadSplit s(4, true);
  EXPECT_EQ(s.compute_threads(), 0);
  EXPECT_NE(s.reason().find("before a window of steps was measured"), std::string::npos) << s.reason();
  // Windows are at least 4 steps and 0.2 s: 4 steps of 0.05 s make one.
  EXPECT_EQ(feed(s, 3, 0.05, 0.0), 0);
  EXPECT_EQ(feed(s, 1, 0.05, 0.0), 1);
  EXPECT_EQ(s.compute_threads(), 1);
  feed(s, 40, 0.05, 0.0);
  EXPECT_EQ(s.compute_threads(), 3) << "the pipeline keeps one worker";
  EXPECT_EQ(s.changes(), 3);
  EXPECT_EQ(
      s.reason(),
      "the pipeline uses 1 of the 4 workers, the trainer's compute the other 3: the model waited for input 0.0% of "
      "the last 4 steps, so the pipeline keeps ahead with one worker");
}

TEST(ThreadSplit, AModelThatWaitsForInputGetsTheWorkersBack) {
  ThreadSplit s(4, true);
  feed(s, 12, 0.05, 0.0);
  ASSERT_EQ(s.compute_threads(), 3);
  feed(s, 4, 0.05, 0.3);
  EXPECT_EQ(s.compute_threads(), 2);
  feed(s, 40, 0.05, 0.3);
  EXPECT_EQ(s.compute_threads(), 0);
  EXPECT_EQ(s.reason(),
            "the pipeline may use all 4 workers: the model waited for input 30.0% of the last 4 steps, so the pipeline "
            "limits training and has every worker");
}

TEST(ThreadSplit, BetweenTheThresholdsTheSplitStays) {
  ThreadSplit s(4, true);
  feed(s, 4, 0.05, 0.0);
  ASSERT_EQ(s.compute_threads(), 1);
  EXPECT_EQ(feed(s, 40, 0.05, 0.03), 0);
  EXPECT_EQ(s.compute_threads(), 1);
  EXPECT_NE(s.reason().find("3.0% of the last 4 steps, between 1% and 5%, so it stays"), std::string::npos)
      << s.reason();
}

TEST(ThreadSplit, LongStepsMakeAWindowOfTheMinimumSteps) {
  ThreadSplit s(2, true);
  EXPECT_EQ(feed(s, 3, 1.0, 0.0), 0) << "fewer than 4 steps is no window, however long";
  EXPECT_EQ(feed(s, 1, 1.0, 0.0), 1);
  // Short steps wait for 0.2 s of them.
  ThreadSplit t(2, true);
  EXPECT_EQ(feed(t, 39, 0.005, 0.0), 0);
  EXPECT_EQ(feed(t, 1, 0.01, 0.0), 1);
}

TEST(ThreadSplit, OffOrOneThreadKeepsEveryWorkerOnThePipeline) {
  ThreadSplit off(4, false);
  EXPECT_EQ(feed(off, 100, 0.05, 0.0), 0);
  EXPECT_EQ(off.compute_threads(), 0);
  EXPECT_EQ(off.reason(), "the pipeline may use all 4 workers: autotuning is off");
  ThreadSplit one(1, true);
  EXPECT_EQ(feed(one, 100, 0.05, 0.0), 0);
  EXPECT_EQ(one.reason(), "the pipeline has the run's one worker: one thread, nothing to split");
}

}  // namespace
}  // namespace pipec

// The split of a training run's threads between its input pipeline and the trainer's compute
// (`pipec run` on a train block, threads: `auto` in effect). Both want the cores: the pipeline's pool
// runs map tasks, the fast executor runs each layer on oneDNN's threads. The split gives the pipeline
// as many pool workers as keep the model from waiting for input, and leaves the other cores to the
// compute (Autotuner::set_compute_threads stops the rest of the pool taking tasks).
//
// How it decides. Over windows of steps (at least kMinSteps and kMinSeconds), it measures the share
// of the time the trainer waited for the next batch. Waiting more than kGiveBack of it: the pipeline
// limits training, so it gets one more worker back. Waiting less than kTake: the pipeline keeps ahead,
// so one of its workers goes to the compute, down to one worker. In between it keeps the split, so it
// does not flap. The pipeline's own `auto` parameters are tuned meanwhile with the workers it has.
// What the split picks never changes the batches, only which thread computes them.
#pragma once

#include <cstdint>
#include <string>

namespace pipec {

class ThreadSplit {
 public:
  static constexpr double kGiveBack = 0.05;  // input wait share above which the pipeline gets a worker back
  static constexpr double kTake = 0.01;      // ... below which one of its workers goes to the compute
  static constexpr int kMinSteps = 4;
  static constexpr double kMinSeconds = 0.2;

  /// `threads`: the run's pool workers; `tune` false keeps every worker on the pipeline.
  ThreadSplit(int threads, bool tune);

  /// After each step: the seconds it waited for input and the seconds the whole step took. Returns
  /// true when the split changed (the caller hands compute_threads() to the pipeline's autotuner).
  bool note_step(double input_wait_seconds, double step_seconds);

  /// Pool workers given to the compute: the pipeline keeps threads() - compute_threads().
  int compute_threads() const { return compute_; }
  int threads() const { return threads_; }
  int changes() const { return changes_; }
  /// One sentence: what the split is and why.
  std::string reason() const;

 private:
  const int threads_;
  const bool tune_;
  int compute_ = 0;
  int changes_ = 0;
  int64_t window_steps_ = 0;
  double window_wait_ = 0, window_seconds_ = 0;
  double last_share_ = -1;  // the input wait share of the last full window; -1 before the first
  int64_t last_steps_ = 0;
};

}  // namespace pipec

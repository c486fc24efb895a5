#include "runtime/train/loop/thread_split.h"

#include <algorithm>

#include <fmt/format.h>

namespace pipec {

ThreadSplit::ThreadSplit(int threads, bool tune) : threads_(std::max(1, threads)), tune_(tune) {}

bool ThreadSplit::note_step(double input_wait_seconds, double step_seconds) {
  ++window_steps_;
  window_wait_ += input_wait_seconds;
  window_seconds_ += step_seconds;
  if (window_steps_ < kMinSteps || window_seconds_ < kMinSeconds) return false;
  last_share_ = window_wait_ / window_seconds_;
  last_steps_ = window_steps_;
  window_steps_ = 0;
  window_wait_ = window_seconds_ = 0;
  if (!tune_ || threads_ < 2) return false;
  int next = compute_;
  if (last_share_ > kGiveBack) next = compute_ - 1;
  else if (last_share_ < kTake) next = compute_ + 1;
  next = std::clamp(next, 0, threads_ - 1);
  if (next == compute_) return false;
  compute_ = next;
  ++changes_;
  return true;
}

std::string ThreadSplit::reason() const {
  const int pipeline = threads_ - compute_;
  const std::string split =
      threads_ == 1   ? std::string("the pipeline has the run's one worker")
      : compute_ == 0 ? fmt::format("the pipeline may use all {} workers", threads_)
                      : fmt::format("the pipeline uses {} of the {} workers, the trainer's compute the other {}",
                                    pipeline, threads_, compute_);
  if (!tune_) return split + ": autotuning is off";
  if (threads_ < 2) return split + ": one thread, nothing to split";
  if (last_share_ < 0) return split + ": the run ended before a window of steps was measured";
  const std::string evidence =
      fmt::format("the model waited for input {:.1f}% of the last {} steps", 100 * last_share_, last_steps_);
  if (last_share_ > kGiveBack)
    return fmt::format("{}: {}, so the pipeline limits training{}", split, evidence,
                       compute_ == 0 ? " and has every worker" : " and got a worker back");
  if (last_share_ < kTake)
    return fmt::format("{}: {}, so the pipeline keeps ahead{}", split, evidence,
                       pipeline == 1 ? " with one worker" : " with fewer workers");
  return fmt::format("{}: {}, between {:.0f}% and {:.0f}%, so it stays", split, evidence, 100 * kTake, 100 * kGiveBack);
}

}  // namespace pipec

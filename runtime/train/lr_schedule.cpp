#include "runtime/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace pipec {

namespace {

double cosine(double initial, double step, double decay_steps, double alpha) {
  const double t = std::min(step, decay_steps);
  const double decayed = (1 - alpha) * 0.5 * (1 + std::cos(std::numbers::pi * t / decay_steps)) + alpha;
  return initial * decayed;
}

}  // namespace

double LrSchedule::at(int64_t step_count) const {
  const double t = static_cast<double>(step_count);
  if (kind == "constant") return initial;
  if (kind == "cosine_decay") {
    if (!has_warmup_target) return cosine(initial, t, decay_steps, alpha);
    if (t < warmup_steps) return initial + (warmup_target - initial) * t / warmup_steps;
    return cosine(warmup_target, t - warmup_steps, decay_steps, alpha);
  }
  if (kind == "linear_warmup") {
    if (warmup_steps <= 0) return warmup_target;
    return initial + (warmup_target - initial) * std::min(t, warmup_steps) / warmup_steps;
  }
  if (kind == "exponential_decay") return initial * std::pow(decay_rate, t / decay_steps);
  throw std::logic_error("unknown learning-rate schedule " + kind);
}

}  // namespace pipec

#include "runtime/train/math/lr_schedule.h"

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

LrSchedule LrSchedule::from_attrs(const ScheduleAttrs& a, double initial) {
  LrSchedule s;
  s.kind = a.kind;
  s.initial = a.initial.value_or(initial);
  s.decay_steps = a.decay_steps.value_or(s.decay_steps);
  s.alpha = a.alpha.value_or(s.alpha);
  s.warmup_steps = a.warmup_steps.value_or(s.warmup_steps);
  s.decay_rate = a.decay_rate.value_or(s.decay_rate);
  s.has_warmup_target = a.warmup_target.has_value();
  s.warmup_target = a.warmup_target.value_or(s.warmup_target);
  return s;
}

double LrSchedule::at(int64_t step_count) const {
  const double t = static_cast<double>(step_count);
  if (!kind) return initial;
  switch (*kind) {
    case ScheduleKind::CosineDecay:
      if (!has_warmup_target) return cosine(initial, t, decay_steps, alpha);
      if (t < warmup_steps) return initial + (warmup_target - initial) * t / warmup_steps;
      return cosine(warmup_target, t - warmup_steps, decay_steps, alpha);
    case ScheduleKind::LinearWarmup:
      if (warmup_steps <= 0) return warmup_target;
      return initial + (warmup_target - initial) * std::min(t, warmup_steps) / warmup_steps;
    case ScheduleKind::ExponentialDecay: return initial * std::pow(decay_rate, t / decay_steps);
  }
  throw std::logic_error("a learning-rate schedule without its formula");
}

}  // namespace pipec

// Learning-rate schedules, Keras' formulas (keras.optimizers.schedules), evaluated at the optimizer's
// step count before the step (Keras calls the schedule with `iterations`, 0 on the first step):
//
//   constant:           lr(t) = initial
//   cosine_decay:       without warm-up: t' = min(t, decay_steps),
//                       lr(t) = initial * ((1 - alpha) * 0.5 * (1 + cos(pi * t' / decay_steps)) + alpha)
//                       with warmup_target: for t < warmup_steps it rises linearly,
//                       lr(t) = initial + (warmup_target - initial) * t / warmup_steps,
//                       then decays from warmup_target as above at t - warmup_steps (Keras' CosineDecay)
//   linear_warmup:      lr(t) = initial + (target - initial) * min(t, warmup_steps) / warmup_steps
//   exponential_decay:  lr(t) = initial * decay_rate ^ (t / decay_steps)  (Keras' ExponentialDecay)
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/model/model_attrs.h"

namespace pipec {

struct LrSchedule {
  /// A schedule node attribute's settings (an absent setting keeps its default here).
  static LrSchedule from_attrs(const ScheduleAttrs& a, double initial);

  std::optional<ScheduleKind> kind;  // none: constant (model_ops.def's SCHEDULE rows)
  double initial = 1e-3;
  double decay_steps = 0;
  double alpha = 0;
  bool has_warmup_target = false;
  double warmup_target = 0;  // cosine_decay's peak after warm-up; linear_warmup's target
  double warmup_steps = 0;
  double decay_rate = 1;

  /// The learning rate of the step taken after `step` steps (0 for the first).
  double at(int64_t step) const;
};

}  // namespace pipec

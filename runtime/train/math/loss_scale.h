// Dynamic loss scaling for `precision = mixed_fp16`, as Keras' LossScaleOptimizer: the loss gradient is
// multiplied by the scale before the backward pass so that small gradients do not flush to zero in f16;
// before the update the gradients are divided by it again. A step whose gradients (or loss) are not all
// finite is skipped (weights and optimizer state untouched) and the scale halves; after 2000 finite steps
// in a row it doubles. It starts at 2^15 (PyTorch's GradScaler starts at 2^16).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace pipec {

struct LossScale {
  static constexpr double kInitial = 32768;      // 2^15
  static constexpr int64_t kGrowthSteps = 2000;  // finite steps in a row before it doubles

  double scale = kInitial;
  int64_t good_steps = 0;  // finite steps since the scale last changed
  int64_t skipped = 0;     // steps skipped so far
  bool last_skipped = false;

  /// After the backward pass: true when the step goes on, with `grads` unscaled in place; false (the
  /// scale halved) when the loss or a gradient is infinite or NaN and the step must be skipped.
  template <class T>
  bool unscale_or_skip(double loss, std::vector<T>& grads) {
    bool finite = std::isfinite(loss);
    for (size_t i = 0; finite && i < grads.size(); ++i) finite = std::isfinite(grads[i]);
    last_skipped = !finite;
    if (!finite) {
      scale /= 2;
      good_steps = 0;
      ++skipped;
      return false;
    }
    const T inverse = static_cast<T>(1 / scale);
    for (T& g : grads) g *= inverse;
    if (++good_steps == kGrowthSteps) {
      scale *= 2;
      good_steps = 0;
    }
    return true;
  }
};

}  // namespace pipec

// batch_norm as Keras computes it, over the last (channel) dimension of a channels-last tensor
// [rows..., channels]: training normalizes with the batch's mean and (biased) variance and moves the
// moving statistics, moving = moving * momentum + batch * (1 - momentum); inference uses the moving
// statistics. gamma and beta are [channels].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/train/dnnl/cpu_kernels.h"

namespace pipec::train {

struct BatchNormDesc {
  /// NHWC [batch, height, width, channels] or [rows, channels]: statistics are over everything but the
  /// channels. height = width = 1 for a 2-D input.
  int64_t batch = 1, height = 1, width = 1, channels = 1;
  float epsilon = 1e-3f;  // Keras' default
  float momentum = 0.99f;

  std::string to_string() const;
};

class BatchNormOp {
 public:
  BatchNormOp(CpuKernels& kernels, const BatchNormDesc& desc);
  ~BatchNormOp();
  BatchNormOp(BatchNormOp&&) noexcept;

  const BatchNormDesc& desc() const { return desc_; }

  /// y from the batch statistics, which this op keeps for backward(); moving_mean and moving_variance
  /// (may be null) are updated in place.
  void forward_training(const float* x, const float* gamma, const float* beta, float* y, float* moving_mean,
                        float* moving_variance);
  /// y from the moving statistics.
  void forward_inference(const float* x, const float* gamma, const float* beta, const float* moving_mean,
                         const float* moving_variance, float* y);
  /// dx, dgamma, dbeta from dy, with the statistics of the last forward_training.
  void backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta);

  /// The last forward_training's batch statistics ([channels] each; the variance is biased).
  std::vector<float> batch_mean() const;
  std::vector<float> batch_variance() const;

  std::string implementation_forward() const;
  std::string implementation_backward() const;
  /// What this op owns: its statistics.
  KernelMemory owned_memory() const;

  struct State;

 private:
  BatchNormDesc desc_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

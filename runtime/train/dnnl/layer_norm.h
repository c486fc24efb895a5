// layer_norm as Keras computes it: each row of [rows, features] normalized by its own mean and (biased)
// variance over the features, then scaled by gamma and shifted by beta ([features] each).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/train/dnnl/cpu_kernels.h"

namespace pipec::train {

struct LayerNormDesc {
  int64_t rows = 1, features = 1;  // every leading dimension folded into rows
  float epsilon = 1e-3f;           // Keras' default

  std::string to_string() const;
};

class LayerNormOp {
 public:
  LayerNormOp(CpuKernels& kernels, const LayerNormDesc& desc);
  ~LayerNormOp();
  LayerNormOp(LayerNormOp&&) noexcept;

  const LayerNormDesc& desc() const { return desc_; }

  /// y; the per-row statistics are kept for backward().
  void forward(const float* x, const float* gamma, const float* beta, float* y);
  void backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta);
  /// The same with the per-row mean and (biased) variance in the caller's buffers ([rows] each): a
  /// training step graph keeps them as values, so its backward node needs no state of the forward's op.
  void forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* variance);
  void backward(const float* x, const float* gamma, const float* dy, const float* mean, const float* variance,
                float* dx, float* dgamma, float* dbeta);

  std::string implementation_forward() const;
  std::string implementation_backward() const;
  /// What this op owns: its statistics.
  KernelMemory owned_memory() const;

  struct State;

 private:
  LayerNormDesc desc_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

// softmax over one axis of a tensor seen as [outer, len, inner] (the axis is the middle one), as Keras'
// Softmax layer computes it (max subtracted first); backward from the output y and dy:
// dx = y * (dy - sum(dy * y)) along the axis.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/train/dnnl/cpu_kernels.h"

namespace pipec::train {

struct SoftmaxDesc {
  int64_t outer = 1, len = 1, inner = 1;

  std::string to_string() const;
};

class SoftmaxOp {
 public:
  SoftmaxOp(CpuKernels& kernels, const SoftmaxDesc& desc);
  ~SoftmaxOp();
  SoftmaxOp(SoftmaxOp&&) noexcept;

  const SoftmaxDesc& desc() const { return desc_; }

  void forward(const float* x, float* y);
  void backward(const float* y, const float* dy, float* dx);

  std::string implementation_forward() const;
  std::string implementation_backward() const;

  struct State;

 private:
  SoftmaxDesc desc_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

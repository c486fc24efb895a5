// An activation applied alone to `count` contiguous floats, forward and backward, with oneDNN's
// vectorized eltwise primitives (relu, leaky_relu, tanh, sigmoid, gelu). bench/train measures them
// against plain loops; docs/design.md says which the step should use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/train/dnnl/activation.h"
#include "runtime/train/dnnl/cpu_kernels.h"

namespace pipec::train {

struct EltwiseDesc {
  Activation activation;
  int64_t count = 1;

  std::string to_string() const;  // "tanh x 2097152"
};

class EltwiseOp {
 public:
  EltwiseOp(CpuKernels& kernels, const EltwiseDesc& desc);
  ~EltwiseOp();
  EltwiseOp(EltwiseOp&&) noexcept;

  const EltwiseDesc& desc() const { return desc_; }

  void forward(const float* x, float* y);
  /// dx = f'(x) * dy.
  void backward_from_input(const float* x, const float* dy, float* dx);
  /// dx = f'(x) * dy computed from y = f(x): what a layer that fused the activation forward (and kept
  /// only y) uses. Only when Activation::derivative_from_output(); otherwise a TrainKernelError.
  void backward_from_output(const float* y, const float* dy, float* dx);

  std::string implementation_forward() const;

  struct State;

 private:
  EltwiseDesc desc_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

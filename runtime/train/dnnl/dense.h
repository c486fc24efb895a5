// dense as Keras computes it: x [rows, in] (every leading dimension folded into rows), kernel [in, out],
// bias [out], y [rows, out]. oneDNN's inner product: its backward primitives give dx, dw and the bias
// gradient directly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/train/dnnl/activation.h"
#include "runtime/train/dnnl/cpu_kernels.h"

namespace pipec::train {

struct DenseDesc {
  int64_t rows = 1, in = 1, out = 1;
  bool bias = true;
  Activation activation;  // fused forward, as Conv2dDesc's
  /// x and dy come as bf16, as Conv2dDesc's.
  bool bf16_x = false, bf16_dy = false;

  std::string to_string() const;  // "dense [512, 4106] -> 256 + relu"
};

class DenseOp {
 public:
  DenseOp(CpuKernels& kernels, const DenseDesc& desc);
  ~DenseOp();
  DenseOp(DenseOp&&) noexcept;

  const DenseDesc& desc() const { return desc_; }
  void forward(const float* x, const float* w, const float* b, float* y);
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db);

  std::string implementation_forward() const;
  std::string implementation_backward_data() const;
  std::string implementation_backward_weights() const;
  /// The buffers this op owns (reordered weights and activations, copies of a reached region); the
  /// scratchpad and staging it shares are its CpuKernels' (shared_memory()).
  KernelMemory owned_memory() const;

  struct State;

 private:
  DenseDesc desc_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

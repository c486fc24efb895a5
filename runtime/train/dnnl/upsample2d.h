// upsample2d as Keras' UpSampling2D computes it, on NHWC [batch, height, width, channels]: `nearest`
// repeats each pixel size_h x size_w times; `bilinear` interpolates with half-pixel centres, the edges
// clamped (tf.image.resize). Backward sums each output gradient into the pixels it was made from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/train/dnnl/cpu_kernels.h"

namespace pipec::train {

struct Upsample2dDesc {
  int64_t batch = 1, height = 1, width = 1, channels = 1;  // the input
  int64_t out_h = 1, out_w = 1;
  bool bilinear = false;

  std::string to_string() const;
};

class Upsample2dOp {
 public:
  Upsample2dOp(CpuKernels& kernels, const Upsample2dDesc& desc);
  ~Upsample2dOp();
  Upsample2dOp(Upsample2dOp&&) noexcept;

  const Upsample2dDesc& desc() const { return desc_; }

  void forward(const float* x, float* y);
  /// dx from dy (nothing of the forward is needed).
  void backward(const float* dy, float* dx);

  std::string implementation_forward() const;
  std::string implementation_backward() const;

  struct State;

 private:
  Upsample2dDesc desc_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

// conv2d_transpose as Keras computes it: x NHWC [batch, height, width, in_channels], kernel HWOI
// [kh, kw, filters, in_channels] (Keras' Conv2DTranspose layout), bias [filters], y NHWC
// [batch, out_h, out_w, filters] with out = in * stride (`same`) or in * stride + max(kernel - stride, 0)
// (`valid`). It is the gradient of a conv2d with respect to its input (oneDNN's deconvolution).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/train/dnnl/activation.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/dnnl/window_geometry.h"

namespace pipec::train {

struct Conv2dTransposeDesc {
  int64_t batch = 1, height = 1, width = 1, in_channels = 1;
  int64_t filters = 1, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  Padding padding = Padding::Valid;
  bool bias = true;
  Activation activation;  // fused forward, as Conv2dDesc's

  std::string to_string() const;
};

class Conv2dTransposeOp {
 public:
  Conv2dTransposeOp(CpuKernels& kernels, const Conv2dTransposeDesc& desc);
  ~Conv2dTransposeOp();
  Conv2dTransposeOp(Conv2dTransposeOp&&) noexcept;

  const Conv2dTransposeDesc& desc() const { return desc_; }
  int64_t out_h() const { return rows_.out; }
  int64_t out_w() const { return cols_.out; }

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
  Conv2dTransposeDesc desc_;
  WindowDim rows_, cols_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

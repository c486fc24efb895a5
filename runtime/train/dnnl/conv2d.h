// conv2d as Keras computes it: x NHWC [batch, height, width, in_channels], kernel HWIO
// [kh, kw, in_channels, filters], bias [filters], y NHWC [batch, out_h, out_w, filters]; TensorFlow's
// padding (asymmetric for `same`: the odd pixel goes after), strides and dilation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "runtime/train/dnnl/activation.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/dnnl/window_geometry.h"

namespace pipec::train {

struct Conv2dDesc {
  int64_t batch = 1, height = 1, width = 1, in_channels = 1;
  int64_t filters = 1, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  Padding padding = Padding::Valid;
  bool bias = true;
  /// Fused after the bias in the forward (a oneDNN post-op). The backward takes the gradient with
  /// respect to the pre-activation: run EltwiseOp::backward_from_output on y first.
  Activation activation;
  /// The caller stores x (forward and backward) and dy (backward) as bf16 values, 2 bytes each, in the
  /// same layout (bf16 kernels only, CpuKernelOptions::bf16): the bf16 primitives read them as they are.
  /// The pointers stay `float*`; what they point at is bf16.
  bool bf16_x = false, bf16_dy = false;

  std::string to_string() const;  // "conv2d [3, 5, 7, 17] -> 4 kernel 2x2 stride 2x2 same"
};

class Conv2dOp {
 public:
  /// Checks the shapes and creates (or finds in the cache) the forward, backward-data and
  /// backward-weights primitives; throws TrainKernelError when the shape is invalid or oneDNN cannot
  /// make one of them.
  Conv2dOp(CpuKernels& kernels, const Conv2dDesc& desc);
  ~Conv2dOp();
  Conv2dOp(Conv2dOp&&) noexcept;

  const Conv2dDesc& desc() const { return desc_; }
  int64_t out_h() const { return rows_.out; }
  int64_t out_w() const { return cols_.out; }
  WindowDim rows() const { return rows_; }
  WindowDim cols() const { return cols_; }

  /// y = activation(conv(x, w) + b). b may be null when the desc has no bias.
  void forward(const float* x, const float* w, const float* b, float* y);
  /// From dy (the gradient at the pre-activation): dx (may be null: the first layer needs none), dw,
  /// and db (null when the desc has no bias). x and w are the forward's.
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db);

  /// oneDNN's implementation names, e.g. "brgconv:avx512_core"; "ref:any" means the slow reference.
  std::string implementation_forward() const;
  std::string implementation_backward_data() const;
  std::string implementation_backward_weights() const;
  /// True when the primitives multiply by Winograd's F(4x4, 3x3) (ConvAlgorithm::Auto on a shape oneDNN
  /// has it for).
  bool winograd() const { return implementation_forward().find("wino") != std::string::npos; }
  /// True when Winograd was tried and gave two different results for one input (ConvAlgorithm): the layer
  /// is then direct.
  bool winograd_refused() const;
  /// The buffers this op owns (reordered weights and activations, copies of a reached region); the
  /// scratchpad and staging it shares are its CpuKernels' (shared_memory()).
  KernelMemory owned_memory() const;

  struct State;

 private:
  void make_layer(bool try_winograd);
  void refuse_winograd();
  template <class Call>
  void checked(bool forward, const Call& call, std::initializer_list<std::pair<const float*, int64_t>> outputs);

  Conv2dDesc desc_;
  WindowDim rows_, cols_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

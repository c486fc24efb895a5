// max_pool2d and avg_pool2d as TensorFlow computes them, on NHWC [batch, height, width, channels]:
// `same` pads as conv2d does; max ignores the padding, avg excludes it from the count (TensorFlow's
// average over the real pixels of each window). Global pools are a window of the whole image.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/dnnl/window_geometry.h"

namespace pipec::train {

enum class PoolKind { Max, Avg };

struct Pool2dDesc {
  int64_t batch = 1, height = 1, width = 1, channels = 1;
  PoolKind kind = PoolKind::Max;
  int64_t size_h = 1, size_w = 1, stride_h = 1, stride_w = 1;
  Padding padding = Padding::Valid;

  std::string to_string() const;
};

class Pool2dOp {
 public:
  Pool2dOp(CpuKernels& kernels, const Pool2dDesc& desc);
  ~Pool2dOp();
  Pool2dOp(Pool2dOp&&) noexcept;

  const Pool2dDesc& desc() const { return desc_; }
  int64_t out_h() const { return rows_.out; }
  int64_t out_w() const { return cols_.out; }

  /// Max pooling remembers where each maximum was (oneDNN's workspace, owned by this op) for the
  /// backward of the same step.
  void forward(const float* x, float* y);
  /// dx from dy; the gradient of a max goes to the (first) position that held it.
  void backward(const float* dy, float* dx);

  std::string implementation_forward() const;
  std::string implementation_backward() const;
  /// What this op owns: max pooling's workspace.
  KernelMemory owned_memory() const;

  struct State;

 private:
  Pool2dDesc desc_;
  WindowDim rows_, cols_;
  std::unique_ptr<State> state_;
};

}  // namespace pipec::train

// The step graph's conv and dense nodes on cuDNN and cuBLASLt, where the device has them: what the GPU
// executor runs instead of the step kernels' direct loops for those kinds (runtime/train/gpu/
// node_kernels.h keeps every kind, for machines without the libraries and for the host emulation).
//
// Keras keeps conv kernels as HWIO (conv2d) and HWOI (conv2d_transpose); cuDNN wants KRSC. Each call
// that reads a kernel reads a KRSC copy made just before it (a transpose kernel over the kernel's few
// thousand values), and a kernel gradient is computed into a KRSC buffer and transposed back into the
// gradient's place, so the flat buffers, the optimizer, --save and checkpoints keep Keras' layouts. The
// bias and a fused relu of conv2d / conv2d_transpose follow as one step kernel (bias_add); dense's come
// from cuBLASLt's epilogue. Workspaces and the KRSC copies grow to the largest call at the first step.
// Under mixed precision a node whose multiplied operands are all rounded to bf16 or fp16 takes TF32 tensor
// cores, which hold those values exactly (tf32_exact_nodes.h); fp32 runs stay off them unless
// `--allow-tf32`.
#pragma once

#include <memory>
#include <string>

#include "runtime/train/gpu/library_types.h"
#include "runtime/train/gpu/step_device.h"

namespace pipec::gpu {

class CudnnConv;
class CublasLtDense;

class LibraryNodes {
 public:
  LibraryNodes(StepDevice& device, bool allow_tf32);
  ~LibraryNodes();

  /// Runs node `o.node` on a library when its kind has one here; false to leave it to launch_node.
  bool run(const NodeOperands& o);

  /// "conv2d on cuDNN 9.19.0, dense on cuBLASLt 13.1.0", or why each runs on pipec's own kernels; then how
  /// many of those nodes ran on TF32 tensor cores for their 16-bit operands (mixed precision).
  std::string describe() const;
  int64_t conv_calls() const { return conv_calls_; }
  int64_t dense_calls() const { return dense_calls_; }

 private:
  struct Impl;
  bool run_conv(const NodeOperands& o);
  bool run_dense(const NodeOperands& o);
  DeviceWorkspace workspace(size_t bytes);
  LibraryCallOptions options_for(bool aligned16, bool tf32_exact) const;
  CudnnConv& conv_for(bool aligned16, bool tf32_exact);
  CublasLtDense& dense_for(bool aligned16, bool tf32_exact);
  /// Whether node `o.node` multiplies 16-bit values only (tf32_exact_nodes.h), so that its library call
  /// may take TF32 tensor cores with no loss; false where the run already allows TF32.
  bool tf32_exact(const NodeOperands& o);
  DevPtr krsc(int slot, size_t bytes);

  StepDevice& d_;
  std::unique_ptr<Impl> impl_;
  int64_t conv_calls_ = 0, dense_calls_ = 0;
};

}  // namespace pipec::gpu

// The fast CPU executor of a training-step graph: the layers on the oneDNN kernels of runtime/train/dnnl
// (conv2d, conv2d_transpose, dense, pools, global pools, batch_norm, layer_norm, upsample2d, softmax,
// leaky_relu, gelu), expr nodes on their JIT-compiled kernels, the optimizer's loop over the flat
// buffers split over its threads, everything else (the loss, dropout) as the reference executor runs
// it. `pipec run` trains on it unless -O0 or `--executor reference` asks for the reference.
//
// Each layer node gets its kernel op once per batch size (a last short batch makes a second set); the
// kernel library caches primitives by shape, so equal layers share them. Activations and gradients stay
// in Keras layouts (NHWC, HWIO, [in, out]); the ops reorder weights once per step (CpuKernels'
// weights generation moves after the optimizer). A layer's backward-data, backward-weights and bias
// gradient nodes run as one kernel call: the first of them in the schedule computes all three.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/train/reference_executor.h"

namespace pipec {

struct FastExecutorOptions {
  /// oneDNN's OpenMP threads for each kernel call; 0: OpenMP's default (one per core).
  int threads = 0;
  /// conv2d's algorithm: Winograd where oneDNN has it unless `direct` (`pipec run --conv direct`).
  bool direct_conv = false;
};

class FastExecutor : public ReferenceExecutor<float> {
 public:
  FastExecutor(const ModelGraph& g, uint64_t seed, FastExecutorOptions options = {});
  ~FastExecutor() override;

  std::string description() const override;
  /// Nodes that run on a oneDNN kernel (a backward group counts each of its nodes).
  int kernel_nodes() const;
  /// Runs of expr nodes on their compiled kernels, and runs of compiled expr nodes that fell back to the
  /// interpreter (a value that is not the dense f32 tensor the kernel was compiled for).
  int64_t expr_kernel_runs() const;
  int64_t expr_fallbacks() const;
  /// The ops of the nodes left to the reference executor's loops (element-wise work, losses, the
  /// optimizer, and the layers without a oneDNN kernel here), each once, in graph order.
  std::vector<std::string> reference_ops() const;

  struct Kernels;

 protected:
  void run_node(const GraphNode& n, int64_t rows, uint64_t step) override;
  ParallelFor loop_threads() const override;
  const NativeKernel* optimizer_kernel(const GraphNode& n) const override { return n.native.get(); }

 private:
  bool run_expr_kernel(const GraphNode& n, int64_t rows);

 private:
  FastExecutorOptions options_;
  std::unique_ptr<Kernels> kernels_;
};

}  // namespace pipec

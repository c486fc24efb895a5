// The GPU executor's claim: how it computes each node kind of model_ops.def, decided in one place.
// The executor dispatches on it (GpuExecutor::run_phases, LibraryNodes::run, launch_node's refusals),
// and tests/unit/model_op_coverage_test.cpp holds it to it: every kind claimed runs on the executor's
// own kernels (on the host emulation in CI) and agrees with the reference executor.
#pragma once

#include "runtime/model/model_graph.h"

namespace pipec::gpu {

enum class NodeKernel {
  StepKernels,  // launch_node's step kernels (runtime/train/gpu/kernels/)
  Cudnn,        // cuDNN where the device has it (LibraryNodes), the step kernels otherwise
  CublasLt,     // cuBLASLt where the device has it (LibraryNodes), the step kernels otherwise
  Generated,    // expr: its generated CUDA kernel (GraphNode::gpu); the host interpreter for a node
                // without one, and always on the host emulation (which has no generated kernels)
  Optimizer,    // optimizer_step: launch_optimizer_step's kernels (GpuOptimizer)
};

/// The kernels of kind `op`. Every kind has some: the GPU executor computes every kind on the device.
NodeKernel node_kernel_of(ModelOp op);

/// Whether the GPU executor computes kind `op` with kernels of its own (every kind; expr nodes only
/// where their CUDA source was generated).
inline bool executor_computes(ModelOp op) {
  (void)node_kernel_of(op);  // throws for a value outside model_ops.def
  return true;
}

}  // namespace pipec::gpu

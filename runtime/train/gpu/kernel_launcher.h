// How the GPU training executor runs its generated step kernels (runtime/train/gpu/kernels/): by name,
// over a number of work items, with cuLaunchKernel's argument convention. Two implementations: the CUDA
// driver (the kernels compiled by NVRTC) and the host emulation (the same source compiled as host C++,
// each kernel called once with one "thread" whose grid-stride loop covers every item), so that every
// kernel and the executor around it are tested in CI without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec::gpu {

/// An address in the memory the step kernels run on: a CUdeviceptr on a GPU, a host pointer under the
/// host emulation.
using DevPtr = uint64_t;

class KernelLauncher {
 public:
  virtual ~KernelLauncher() = default;
  /// Launches step kernel `name` (a row of kernels/step_kernels.def) over `items` work items (the grid is
  /// sized from it; the kernel's grid-stride loop makes any grid correct). `params` points at each
  /// argument, in the kernel's parameter order (cuLaunchKernel's `kernelParams`).
  virtual void launch(const char* name, int64_t items, void** params) = 0;
};

/// One node's operands on the device: every input and output value as a dense f32 buffer of its full
/// shape for `rows` examples (parameters and their gradients are views of the flat buffers), and a
/// scratch area of node_scratch_bytes() for partial sums.
struct NodeOperands {
  const ModelGraph* graph = nullptr;
  const GraphNode* node = nullptr;
  int64_t rows = 0;
  uint64_t step = 0;  // keys dropout, as on the CPU
  uint64_t seed = 0;  // the run's seed, which keys dropout too
  /// Two device u64s: `step`, then the global index of the batch's first example
  /// (StepExecutor::set_first_example). The dropout kernel reads both there, so that a replayed CUDA
  /// graph sees each step's values (the executor writes them before each step). Needed by dropout nodes.
  DevPtr step_counter = 0;
  std::vector<DevPtr> inputs, outputs;
  DevPtr scratch = 0;
  /// mixed_fp16: a device float holding the current loss scale (a loss_backward node with
  /// `loss_scale` multiplies its gradient by it). 0 otherwise.
  DevPtr loss_scale = 0;
};

}  // namespace pipec::gpu

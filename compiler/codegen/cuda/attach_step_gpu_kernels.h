// The pass that gives every expr node of a training-step graph its CUDA kernel (GraphNode::gpu), printed
// from the same loop nests the CPU's JIT compiles (cuda_emitter.h), the batch as rows.
#pragma once

#include "runtime/model/model_graph.h"

namespace pipec::cuda_codegen {

/// Sets GraphNode::gpu on every expr node: the kernel, or one whose `unsupported` says why there is none
/// (a random op, which the executors key by the interpreter's context; an op the loop nests do not
/// lower). Kernels are named pipec_step_<graph>_node_<index>. Returns how many kernels were printed.
int attach_step_gpu_kernels(ModelGraph& graph);

}  // namespace pipec::cuda_codegen

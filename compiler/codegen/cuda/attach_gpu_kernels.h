// The pass that gives every map after to(gpu) its generated CUDA kernel (Stage::gpu).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec::cuda_codegen {

/// For each map stage whose input is on the GPU (after to(gpu)), runs the CUDA generator on its body
/// and sets Stage::gpu: the kernel, or a GpuKernel whose `unsupported` says why there is none (the
/// runtime then warns and runs that map on the CPU). Kernels are named pipec_map_<stage index>.
/// Returns how many kernels were generated.
int attach_gpu_kernels(Plan& plan);

}  // namespace pipec::cuda_codegen

// The GPU of a training step through the CUDA driver: device memory, the step kernels compiled by NVRTC
// (through the PTX disk cache) for the GPU's architecture, expr nodes' generated kernels, one stream.
#pragma once

#include <memory>

#include "runtime/gpu/cuda_loader.h"
#include "runtime/train/gpu/step_device.h"

namespace pipec::gpu {

/// Compiles and loads the step kernels for `driver`'s GPU. Throws GpuError naming what failed (NVRTC
/// missing, its log on a compile error, a driver call).
std::unique_ptr<StepDevice> make_cuda_step_device(const CudaDriver& driver);

}  // namespace pipec::gpu

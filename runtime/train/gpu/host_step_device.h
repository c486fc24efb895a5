// The host emulation of a GPU for the training step: host memory, the step kernels compiled as host C++
// (host_step_kernels.h), expr nodes left to the executor's host path. The GPU executor runs on it in CI
// exactly as on a GPU, launch for launch, so its memory plan, operands and every kernel are tested
// without one. New allocations are filled with NaN bytes, so a kernel that leaves an output unwritten
// shows in the results instead of reading an old value.
#pragma once

#include <memory>

#include "runtime/train/gpu/step_device.h"

namespace pipec::gpu {

/// `libraries`: what the device offers the executor; a test passes recording fakes of cuDNN and
/// cuBLASLt (which compute on host pointers) to run the executor's library path on the host.
std::unique_ptr<StepDevice> make_host_emulation_device(GpuLibraries libraries = {});

}  // namespace pipec::gpu

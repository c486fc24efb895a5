// The step kernels (runtime/train/gpu/kernels/) compiled as host C++: each kernel is called once with one
// "thread" whose grid-stride loop covers every work item. The same source NVRTC compiles for the GPU, so
// CI runs every kernel, and the executor around them, without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/train/gpu/kernel_launcher.h"

namespace pipec::gpu {

/// Calls one kernel with cuLaunchKernel's argument convention: params[i] points at argument i.
using HostStepKernel = void (*)(void** params);

/// The host build of kernel `name` (a row of kernels/step_kernels.def); std::invalid_argument naming it
/// when there is no such kernel.
HostStepKernel host_step_kernel(std::string_view name);

/// Every row of kernels/step_kernels.def, in order.
const std::vector<std::string_view>& step_kernel_names();

/// The launcher of the host emulation: device pointers are host pointers. Each launch is checked
/// against the kernel's first argument (its item count) and counted.
class HostKernelLauncher : public KernelLauncher {
 public:
  void launch(const char* name, int64_t items, void** params) override;
  /// Launches of each kernel so far.
  const std::map<std::string, int64_t>& launches() const { return launches_; }

 private:
  std::map<std::string, int64_t> launches_;
};

}  // namespace pipec::gpu

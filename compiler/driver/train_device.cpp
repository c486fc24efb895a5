#include "compiler/driver/train_device.h"

#include <cstdlib>
#include <cstring>

#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/gpu_error.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/gpu/cuda_step_device.h"
#include "runtime/train/gpu/gpu_executor.h"
#include "runtime/train/gpu/host_step_device.h"

namespace pipec {

namespace {

bool host_emulation() {
  const char* v = std::getenv("PIPEC_GPU_HOST_EMULATION");
  return v && std::strcmp(v, "1") == 0;
}

// Why this machine's GPU cannot train a step: empty when it can. `driver_found` says whether a CUDA
// driver exists at all (a machine without one is a CPU machine, not a broken GPU one).
std::string gpu_unusable(bool& driver_found) {
  std::string why;
  driver_found = false;
  if (!gpu::cuda_driver(&why)) {
    // No driver library, or only the toolkit's stub: a machine without a GPU, not a broken GPU machine.
    driver_found = why.find("not installed") == std::string::npos && why.find("stub") == std::string::npos;
    return why.empty() ? "no CUDA driver" : why;
  }
  driver_found = true;
  if (!gpu::Nvrtc::get(&why)) return "NVRTC (the CUDA run-time compiler the step's kernels need) is missing: " + why;
  return "";
}

}  // namespace

TrainDeviceChoice choose_train_device(const TrainDeviceRequest& r) {
  TrainDeviceChoice c;
  const bool cpu_executor_asked = r.executor_given;
  if (r.device == "gpu" && cpu_executor_asked) {
    c.error = "--executor " + r.executor + " runs on the CPU; it does not go with --device gpu";
    c.exit_code = 2;
    return c;
  }
  FastExecutorOptions fo;
  fo.threads = r.threads;
  fo.direct_conv = r.direct_conv;
  fo.cpu_bf16 = parse_cpu_bf16(r.cpu_bf16).value_or(CpuBf16::Auto);  // the flag's check allows only the three
  if (fo.cpu_bf16 == CpuBf16::Native && !train::CpuKernels::native_bf16()) {
    c.error = "--cpu-bf16 native: this CPU has no bf16 instructions (oneDNN runs " + train::CpuKernels::isa() +
              " code here); auto or emulated round to bf16 and multiply in f32";
    c.exit_code = 2;
    return c;
  }
  const auto fast = [fo](const ModelGraph& g, uint64_t seed) -> std::unique_ptr<StepExecutor> {
    return std::make_unique<FastExecutor>(g, seed, fo);
  };
  if (r.executor == "fast") c.make_eval = fast;
  bool want_gpu = r.device == "gpu" || (r.device == "auto" && !cpu_executor_asked);
  const gpu::GpuExecutorOptions gpu_options{r.allow_tf32};
  if (want_gpu && r.device == "gpu" && host_emulation()) {
    c.gpu = true;
    c.make = [gpu_options](const ModelGraph& g, uint64_t seed) -> std::unique_ptr<StepExecutor> {
      return std::make_unique<gpu::GpuExecutor>(g, seed, gpu::make_host_emulation_device(), gpu_options);
    };
    return c;
  }
  if (want_gpu) {
    bool driver_found = false;
    const std::string why = gpu_unusable(driver_found);
    if (why.empty()) {
      c.gpu = true;
      c.make = [gpu_options](const ModelGraph& g, uint64_t seed) -> std::unique_ptr<StepExecutor> {
        return std::make_unique<gpu::GpuExecutor>(g, seed, gpu::make_cuda_step_device(*gpu::cuda_driver()),
                                                  gpu_options);
      };
      return c;
    }
    if (r.device == "gpu") {
      c.error = "--device gpu: no GPU to train on: " + why;
      c.exit_code = 3;
      return c;
    }
    if (driver_found) c.note = "note: training on the CPU: " + why;
  }
  if (r.executor == "fast") c.make = fast;
  return c;
}

}  // namespace pipec

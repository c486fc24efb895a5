// The device a GPU training step runs on, as the GPU executor sees it: memory, copies, the step kernels
// and the generated kernels of expr nodes, all in order on one stream. Two implementations:
//   - the CUDA driver (cuda_step_device.h): device memory, NVRTC-compiled kernels, one stream;
//   - the host emulation (host_step_device.h): host memory and the same kernel source compiled as host
//     C++, so the executor, its memory plan and every step kernel run in CI, where there is no GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/gpu/cublaslt_api.h"
#include "runtime/gpu/cudnn_api.h"
#include "runtime/plan/gpu_kernel.h"
#include "runtime/train/gpu/kernel_launcher.h"

namespace pipec::gpu {

/// The CUDA libraries a device offers the executor (null: not there, with why).
struct GpuLibraries {
  const cudnn::CudnnApi* cudnn = nullptr;
  const cublaslt::CublasLtApi* cublaslt = nullptr;
  std::string cudnn_missing, cublaslt_missing;  // why each is absent, for the run's description
  std::string cudnn_version, cublaslt_version;
};

class StepDevice {
 public:
  virtual ~StepDevice() = default;

  /// "NVIDIA H200 (sm_90)", or "host emulation".
  virtual std::string describe() const = 0;
  virtual bool emulated() const = 0;

  /// Memory for the step (never per step: the executor allocates once per batch size).
  virtual DevPtr alloc(size_t bytes) = 0;
  virtual void release(DevPtr p) = 0;
  /// Bytes of device memory free now, and in all (-1 when unknown): the fit check before step 1.
  virtual int64_t free_bytes() const = 0;
  virtual int64_t total_bytes() const = 0;

  /// Copies, in order with the kernels. `upload` has finished reading `src` when it returns; `download`
  /// waits for everything before it.
  virtual void upload(DevPtr dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, DevPtr src, size_t bytes) = 0;
  virtual void copy(DevPtr dst, DevPtr src, size_t bytes) = 0;
  virtual void zero(DevPtr dst, size_t bytes) = 0;
  /// Waits until everything enqueued has run (and reports a failure of any of it).
  virtual void synchronize() = 0;

  /// The step kernels (kernels/step_kernels.def).
  virtual KernelLauncher& step_kernels() = 0;

  /// Makes an expr node's generated kernel (runtime/plan/gpu_kernel.h's ABI) ready to launch. False,
  /// with `why`, when it cannot run here (the executor then computes the node on the host).
  virtual bool load_generated(const GpuKernel& kernel, std::string& why) = 0;
  virtual void launch_generated(const std::string& entry, int64_t items, void** params) = 0;

  /// The stream the libraries (cuDNN, cuBLASLt) enqueue on: a CUstream, null under the emulation.
  virtual void* stream() const { return nullptr; }
  /// cuDNN and cuBLASLt where found (the host emulation offers whatever a test gives it).
  virtual const GpuLibraries& libraries() const = 0;
};

/// A block of device memory, given back when it goes.
class DeviceBlock {
 public:
  DeviceBlock() = default;
  DeviceBlock(StepDevice& d, size_t bytes) : d_(&d), bytes_(bytes) { ptr_ = bytes ? d.alloc(bytes) : 0; }
  ~DeviceBlock() { reset(); }
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  DeviceBlock(DeviceBlock&& o) noexcept { *this = std::move(o); }
  DeviceBlock& operator=(DeviceBlock&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = o.d_, ptr_ = o.ptr_, bytes_ = o.bytes_;
      o.ptr_ = 0, o.bytes_ = 0;
    }
    return *this;
  }
  void reset() {
    if (ptr_ && d_) d_->release(ptr_);
    ptr_ = 0, bytes_ = 0;
  }
  DevPtr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  /// The address `byte_offset` bytes in.
  DevPtr at(int64_t byte_offset) const { return ptr_ + static_cast<DevPtr>(byte_offset); }

 private:
  StepDevice* d_ = nullptr;
  DevPtr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace pipec::gpu

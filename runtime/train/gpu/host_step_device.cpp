#include "runtime/train/gpu/host_step_device.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "runtime/train/gpu/host_step_kernels.h"

namespace pipec::gpu {

namespace {

class HostStepDevice final : public StepDevice {
 public:
  explicit HostStepDevice(GpuLibraries libraries) : libraries_(std::move(libraries)) {
    if (!libraries_.cudnn && libraries_.cudnn_missing.empty()) libraries_.cudnn_missing = "the host emulation";
    if (!libraries_.cublaslt && libraries_.cublaslt_missing.empty()) libraries_.cublaslt_missing = "the host emulation";
  }
  std::string describe() const override { return "host emulation (the step kernels compiled as host C++)"; }
  bool emulated() const override { return true; }

  DevPtr alloc(size_t bytes) override {
    constexpr std::align_val_t kAlign{256};  // cuMemAlloc's alignment
    void* p = ::operator new[](bytes, kAlign);
    std::memset(p, 0xff, bytes);  // NaN in every float: an unwritten output cannot pass for a result
    return reinterpret_cast<DevPtr>(p);
  }
  void release(DevPtr p) override { ::operator delete[](reinterpret_cast<void*>(p), std::align_val_t{256}); }
  int64_t free_bytes() const override { return -1; }
  int64_t total_bytes() const override { return -1; }

  void upload(DevPtr dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  }
  void download(void* dst, DevPtr src, size_t bytes) override {
    if (bytes) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  }
  void copy(DevPtr dst, DevPtr src, size_t bytes) override {
    if (bytes) std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  }
  void zero(DevPtr dst, size_t bytes) override {
    if (bytes) std::memset(reinterpret_cast<void*>(dst), 0, bytes);
  }
  void synchronize() override {}

  KernelLauncher& step_kernels() override { return kernels_; }
  const GpuLibraries& libraries() const override { return libraries_; }

  bool load_generated(const GpuKernel&, std::string& why) override {
    why = "the host emulation computes expr nodes on the host";
    return false;
  }
  void launch_generated(const std::string& entry, int64_t, void**) override {
    throw std::logic_error("host emulation: no generated kernel " + entry);
  }

 private:
  HostKernelLauncher kernels_;
  GpuLibraries libraries_;
};

}  // namespace

std::unique_ptr<StepDevice> make_host_emulation_device(GpuLibraries libraries) {
  return std::make_unique<HostStepDevice>(std::move(libraries));
}

}  // namespace pipec::gpu

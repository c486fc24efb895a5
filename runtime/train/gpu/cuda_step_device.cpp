#include "runtime/train/gpu/cuda_step_device.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "runtime/gpu/cublaslt_loader.h"
#include "runtime/gpu/cudnn_loader.h"
#include "runtime/gpu/gpu_error.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/gpu/ptx_cache.h"
#include "runtime/train/gpu/step_kernel_source.h"

namespace pipec::gpu {

namespace {

// Threads per block for every launch: the kernels are grid-stride loops over independent items, so any
// shape is correct; 256 keeps occupancy high for the simple element-wise bodies.
constexpr unsigned kBlock = 256;

// A loaded module and its functions, looked up once per name.
class Module {
 public:
  Module(const CudaDriver& d, const std::string& source, const std::string& name) : d_(d) {
    std::string why;
    const Nvrtc* nvrtc = Nvrtc::get(&why);
    if (!nvrtc) throw GpuError("NVRTC is needed to compile the training step's kernels: " + why);
    CachedPtx ptx = compile_ptx_cached(*nvrtc, source, name, d.arch, exact_math_options());
    if (!ptx.result.ok) throw GpuError("NVRTC could not compile " + name + ":\n" + ptx.result.log);
    d.make_current();
    d.check(d.cuModuleLoadData(&module_, ptx.result.ptx.c_str()), "cuModuleLoadData");
  }
  ~Module() {
    if (module_) d_.cuModuleUnload(module_);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  cuda::CUfunction function(const std::string& entry) {
    auto it = functions_.find(entry);
    if (it != functions_.end()) return it->second;
    cuda::CUfunction f = nullptr;
    d_.check(d_.cuModuleGetFunction(&f, module_, entry.c_str()), "cuModuleGetFunction");
    functions_.emplace(entry, f);
    return f;
  }

 private:
  const CudaDriver& d_;
  cuda::CUmodule module_ = nullptr;
  std::map<std::string, cuda::CUfunction> functions_;
};

class CudaStepDevice;

class CudaLauncher final : public KernelLauncher {
 public:
  CudaLauncher(const CudaDriver& d, Module& m, cuda::CUstream s) : d_(d), m_(m), s_(s) {}
  void launch(const char* name, int64_t items, void** params) override;

 private:
  const CudaDriver& d_;
  Module& m_;
  cuda::CUstream s_;
};

unsigned grid_for(const CudaDriver& d, int64_t items) {
  const int64_t blocks = (std::max<int64_t>(items, 1) + kBlock - 1) / kBlock;
  // Enough blocks to fill every multiprocessor many times; beyond that the grid-stride loop takes over.
  const int64_t cap = static_cast<int64_t>(std::max(d.multiprocessors, 1)) * 32;
  return static_cast<unsigned>(std::min(blocks, cap));
}

void CudaLauncher::launch(const char* name, int64_t items, void** params) {
  cuda::CUfunction f = m_.function(name);
  cuda::CUresult r = d_.cuLaunchKernel(f, grid_for(d_, items), 1, 1, kBlock, 1, 1, 0, s_, params, nullptr);
  if (r != cuda::CUDA_SUCCESS)
    throw GpuError(fmt::format("launching the step kernel {} over {} items: {}", name, items, d_.error_string(r)));
}

class CudaStepDevice final : public StepDevice {
 public:
  explicit CudaStepDevice(const CudaDriver& d) : d_(d) {
    d.make_current();
    steps_ = std::make_unique<Module>(d, std::string(step_kernel_source()), "pipec_step_kernels.cu");
    d.check(d.cuStreamCreate(&stream_, cuda::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    launcher_ = std::make_unique<CudaLauncher>(d, *steps_, stream_);
    if (const CudnnLibrary* l = cudnn_library(&libraries_.cudnn_missing)) {
      libraries_.cudnn = &l->api;
      libraries_.cudnn_version = l->version_string();
    }
    if (const CublasLtLibrary* l = cublaslt_library(&libraries_.cublaslt_missing)) {
      libraries_.cublaslt = &l->api;
      libraries_.cublaslt_version = l->version_string();
    }
  }
  ~CudaStepDevice() override {
    if (stream_) {
      d_.cuStreamSynchronize(stream_);
      d_.cuStreamDestroy(stream_);
    }
  }

  std::string describe() const override { return fmt::format("{} (sm_{})", d_.device_name, d_.arch); }
  bool emulated() const override { return false; }

  DevPtr alloc(size_t bytes) override {
    d_.make_current();
    cuda::CUdeviceptr p = 0;
    cuda::CUresult r = d_.cuMemAlloc(&p, std::max<size_t>(bytes, 1));
    if (r != cuda::CUDA_SUCCESS)
      throw GpuError(fmt::format("cuMemAlloc of {} bytes for the training step: {}", bytes, d_.error_string(r)));
    return p;
  }
  void release(DevPtr p) override {
    if (p) d_.cuMemFree(p);
  }
  int64_t free_bytes() const override { return mem_info().first; }
  int64_t total_bytes() const override { return mem_info().second; }

  void upload(DevPtr dst, const void* src, size_t bytes) override {
    if (!bytes) return;
    d_.check(d_.cuMemcpyHtoDAsync(dst, src, bytes, stream_), "cuMemcpyHtoDAsync");
    // The source is pageable host memory the caller may reuse at once: wait for the copy.
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize after a copy to the GPU");
  }
  void download(void* dst, DevPtr src, size_t bytes) override {
    if (!bytes) return;
    d_.check(d_.cuMemcpyDtoHAsync(dst, src, bytes, stream_), "cuMemcpyDtoHAsync");
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize after a copy from the GPU");
  }
  void copy(DevPtr dst, DevPtr src, size_t bytes) override {
    if (bytes) d_.check(d_.cuMemcpyDtoDAsync(dst, src, bytes, stream_), "cuMemcpyDtoDAsync");
  }
  void zero(DevPtr dst, size_t bytes) override {
    if (bytes) d_.check(d_.cuMemsetD8Async(dst, 0, bytes, stream_), "cuMemsetD8Async");
  }
  void synchronize() override { d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize (the training step)"); }

  KernelLauncher& step_kernels() override { return *launcher_; }

  bool load_generated(const GpuKernel& kernel, std::string& why) override {
    if (generated_.count(kernel.entry)) return true;
    try {
      auto m = std::make_unique<Module>(d_, kernel.source, kernel.entry + ".cu");
      m->function(kernel.entry);
      generated_.emplace(kernel.entry, std::move(m));
      return true;
    } catch (const GpuError& e) {
      why = e.what();
      return false;
    }
  }
  void launch_generated(const std::string& entry, int64_t items, void** params) override {
    cuda::CUfunction f = generated_.at(entry)->function(entry);
    cuda::CUresult r = d_.cuLaunchKernel(f, grid_for(d_, items), 1, 1, kBlock, 1, 1, 0, stream_, params, nullptr);
    if (r != cuda::CUDA_SUCCESS)
      throw GpuError(fmt::format("launching the generated kernel {}: {}", entry, d_.error_string(r)));
  }

  void* stream() const override { return stream_; }
  const GpuLibraries& libraries() const override { return libraries_; }

 private:
  std::pair<int64_t, int64_t> mem_info() const {
    size_t free = 0, total = 0;
    d_.make_current();
    if (d_.cuMemGetInfo(&free, &total) != cuda::CUDA_SUCCESS) return {-1, -1};
    return {static_cast<int64_t>(free), static_cast<int64_t>(total)};
  }

  const CudaDriver& d_;
  std::unique_ptr<Module> steps_;
  std::map<std::string, std::unique_ptr<Module>> generated_;
  cuda::CUstream stream_ = nullptr;
  std::unique_ptr<CudaLauncher> launcher_;
  GpuLibraries libraries_;
};

}  // namespace

std::unique_ptr<StepDevice> make_cuda_step_device(const CudaDriver& driver) {
  return std::make_unique<CudaStepDevice>(driver);
}

}  // namespace pipec::gpu

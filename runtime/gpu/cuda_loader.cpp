#include "runtime/gpu/cuda_loader.h"

#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "runtime/gpu/cuda_library_dirs.h"
#include "runtime/gpu/gpu_error.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {

using namespace cuda;

std::string CudaDriver::error_string(CUresult r) const {
  const char* s = nullptr;
  if (cuGetErrorString && cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return fmt::format("error {} ({})", r, s);
  return fmt::format("error {}", r);
}

void CudaDriver::check(CUresult r, const char* what) const {
  if (r != CUDA_SUCCESS) throw GpuError(fmt::format("{} failed: {}", what, error_string(r)));
}

void CudaDriver::make_current() const { check(cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

std::vector<std::string> cuda_driver_candidates() {
  if (const char* v = std::getenv("PIPEC_CUDA_LIBRARY"); v && *v) return {v};
  // The driver comes with the kernel module, so the loader's own search path is the right place;
  // the toolkit folders only hold the stub, which is never opened. Containers often mount the
  // driver's libraries in a folder of their own without adding it to the loader's cache, so the
  // usual mount points come after.
  std::vector<std::string> candidates = {"libcuda.so.1", "libcuda.so"};
  for (const std::string& path : existing_library_files({"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
                                                         "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib"},
                                                        {"libcuda.so.1"}))
    candidates.push_back(path);
  return candidates;
}

namespace {

template <class F>
bool resolve(const SharedLibrary& lib, F& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<F>(lib.symbol(name));
  if (!slot) missing += missing.empty() ? name : std::string(", ") + name;
  return slot != nullptr;
}

std::unique_ptr<CudaDriver> open_driver(std::string& why) {
  SharedLibrary lib = open_first_library(cuda_driver_candidates(), why);
  if (!lib.handle) {
    why = "the CUDA driver library (libcuda.so.1) is not installed: " + why;
    return nullptr;
  }
  auto d = std::make_unique<CudaDriver>();
  d->library = lib.file;
  std::string missing;
  resolve(lib, d->cuInit, "cuInit", missing);
  resolve(lib, d->cuGetErrorString, "cuGetErrorString", missing);
  resolve(lib, d->cuDriverGetVersion, "cuDriverGetVersion", missing);
  resolve(lib, d->cuDeviceGetCount, "cuDeviceGetCount", missing);
  resolve(lib, d->cuDeviceGet, "cuDeviceGet", missing);
  resolve(lib, d->cuDeviceGetName, "cuDeviceGetName", missing);
  resolve(lib, d->cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  resolve(lib, d->cuDeviceTotalMem, "cuDeviceTotalMem_v2", missing);
  resolve(lib, d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  resolve(lib, d->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", missing);
  resolve(lib, d->cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  resolve(lib, d->cuModuleLoadData, "cuModuleLoadData", missing);
  resolve(lib, d->cuModuleUnload, "cuModuleUnload", missing);
  resolve(lib, d->cuModuleGetFunction, "cuModuleGetFunction", missing);
  resolve(lib, d->cuMemAlloc, "cuMemAlloc_v2", missing);
  resolve(lib, d->cuMemFree, "cuMemFree_v2", missing);
  resolve(lib, d->cuMemHostAlloc, "cuMemHostAlloc", missing);
  resolve(lib, d->cuMemFreeHost, "cuMemFreeHost", missing);
  resolve(lib, d->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  resolve(lib, d->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  resolve(lib, d->cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  resolve(lib, d->cuStreamCreate, "cuStreamCreate", missing);
  resolve(lib, d->cuStreamDestroy, "cuStreamDestroy_v2", missing);
  resolve(lib, d->cuStreamSynchronize, "cuStreamSynchronize", missing);
  resolve(lib, d->cuStreamQuery, "cuStreamQuery", missing);
  resolve(lib, d->cuStreamWaitEvent, "cuStreamWaitEvent", missing);
  resolve(lib, d->cuEventCreate, "cuEventCreate", missing);
  resolve(lib, d->cuEventDestroy, "cuEventDestroy_v2", missing);
  resolve(lib, d->cuEventRecord, "cuEventRecord", missing);
  resolve(lib, d->cuEventSynchronize, "cuEventSynchronize", missing);
  resolve(lib, d->cuEventElapsedTime, "cuEventElapsedTime", missing);
  resolve(lib, d->cuLaunchKernel, "cuLaunchKernel", missing);
  resolve(lib, d->cuMemsetD8Async, "cuMemsetD8Async", missing);
  resolve(lib, d->cuMemGetInfo, "cuMemGetInfo_v2", missing);
  if (!missing.empty()) {
    why = fmt::format("{} lacks driver functions pipec needs ({}); the driver is too old", lib.path, missing);
    return nullptr;
  }
  CUresult r = d->cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    why = fmt::format("{} is the CUDA toolkit's stub, not a driver", lib.path);
    return nullptr;
  }
  if (r == CUDA_ERROR_NO_DEVICE) {
    why = "the CUDA driver found no GPU";
    return nullptr;
  }
  if (r != CUDA_SUCCESS) {
    why = fmt::format("cuInit failed: {}", d->error_string(r));
    return nullptr;
  }
  int count = 0;
  if (d->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    why = "the CUDA driver found no GPU";
    return nullptr;
  }
  int major = 0, minor = 0;
  char name[256] = {};
  if ((r = d->cuDeviceGet(&d->device, 0)) != CUDA_SUCCESS ||
      (r = d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->device)) != CUDA_SUCCESS ||
      (r = d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->device)) != CUDA_SUCCESS ||
      (r = d->cuDeviceGetAttribute(&d->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->device)) !=
          CUDA_SUCCESS ||
      (r = d->cuDeviceGetName(name, sizeof name - 1, d->device)) != CUDA_SUCCESS ||
      (r = d->cuDeviceTotalMem(&d->total_memory, d->device)) != CUDA_SUCCESS ||
      (r = d->cuDevicePrimaryCtxRetain(&d->context, d->device)) != CUDA_SUCCESS) {
    why = fmt::format("GPU 0 could not be opened: {}", d->error_string(r));
    return nullptr;
  }
  d->arch = major * 10 + minor;
  d->device_name = name;
  return d;
}

}  // namespace

const CudaDriver* cuda_driver(std::string* why) {
  // Opened once: the driver keeps its state for the life of the process anyway, and the answer must
  // not change in the middle of a run. The primary context is never released (it lives as long as the
  // process, like the driver).
  static std::once_flag once;
  static std::unique_ptr<CudaDriver> driver;
  static std::string reason;
  std::call_once(once, [] { driver = open_driver(reason); });
  if (!driver && why) *why = reason;
  return driver.get();
}

}  // namespace pipec::gpu

// The CUDA driver API, opened with dlopen: the same pipec binary runs on machines without a GPU.
#pragma once

#include <string>
#include <vector>

#include "runtime/gpu/cuda_api.h"

namespace pipec::gpu {

struct CudaDriver {
  cuda::PFN_cuInit cuInit = nullptr;
  cuda::PFN_cuGetErrorString cuGetErrorString = nullptr;
  cuda::PFN_cuDriverGetVersion cuDriverGetVersion = nullptr;
  cuda::PFN_cuDeviceGetCount cuDeviceGetCount = nullptr;
  cuda::PFN_cuDeviceGet cuDeviceGet = nullptr;
  cuda::PFN_cuDeviceGetName cuDeviceGetName = nullptr;
  cuda::PFN_cuDeviceGetAttribute cuDeviceGetAttribute = nullptr;
  cuda::PFN_cuDeviceTotalMem cuDeviceTotalMem = nullptr;
  cuda::PFN_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain = nullptr;
  cuda::PFN_cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease = nullptr;
  cuda::PFN_cuCtxSetCurrent cuCtxSetCurrent = nullptr;
  cuda::PFN_cuModuleLoadData cuModuleLoadData = nullptr;
  cuda::PFN_cuModuleUnload cuModuleUnload = nullptr;
  cuda::PFN_cuModuleGetFunction cuModuleGetFunction = nullptr;
  cuda::PFN_cuMemAlloc cuMemAlloc = nullptr;
  cuda::PFN_cuMemFree cuMemFree = nullptr;
  cuda::PFN_cuMemHostAlloc cuMemHostAlloc = nullptr;
  cuda::PFN_cuMemFreeHost cuMemFreeHost = nullptr;
  cuda::PFN_cuMemcpyHtoDAsync cuMemcpyHtoDAsync = nullptr;
  cuda::PFN_cuMemcpyDtoHAsync cuMemcpyDtoHAsync = nullptr;
  cuda::PFN_cuMemcpyDtoDAsync cuMemcpyDtoDAsync = nullptr;
  cuda::PFN_cuStreamCreate cuStreamCreate = nullptr;
  cuda::PFN_cuStreamDestroy cuStreamDestroy = nullptr;
  cuda::PFN_cuStreamSynchronize cuStreamSynchronize = nullptr;
  cuda::PFN_cuStreamQuery cuStreamQuery = nullptr;
  cuda::PFN_cuStreamWaitEvent cuStreamWaitEvent = nullptr;
  cuda::PFN_cuEventCreate cuEventCreate = nullptr;
  cuda::PFN_cuEventDestroy cuEventDestroy = nullptr;
  cuda::PFN_cuEventRecord cuEventRecord = nullptr;
  cuda::PFN_cuEventSynchronize cuEventSynchronize = nullptr;
  cuda::PFN_cuEventElapsedTime cuEventElapsedTime = nullptr;
  cuda::PFN_cuLaunchKernel cuLaunchKernel = nullptr;
  cuda::PFN_cuMemsetD8Async cuMemsetD8Async = nullptr;
  cuda::PFN_cuMemGetInfo cuMemGetInfo = nullptr;

  std::string library;        // the file dlopen opened (absolute when a bare name was resolved)
  cuda::CUdevice device = 0;  // device 0 (one GPU per process for now)
  cuda::CUcontext context = nullptr;
  std::string device_name;
  int arch = 0;  // compute capability as major * 10 + minor (90 on an H100)
  int multiprocessors = 0;
  size_t total_memory = 0;  // bytes

  /// "CUDA_ERROR_...: text" for a result code.
  std::string error_string(cuda::CUresult r) const;
  /// Throws GpuError naming `what` when `r` is not CUDA_SUCCESS. Makes the primary context current on
  /// the calling thread first when asked (driver calls need it on every thread that makes them).
  void check(cuda::CUresult r, const char* what) const;
  void make_current() const;
};

/// The driver with device 0's primary context, opened once per process. Null when there is no usable
/// GPU, with `why` saying why in one sentence (no libcuda, the stub library, no device, init failed).
/// $PIPEC_CUDA_LIBRARY names the library to open instead of searching (tests point it at a missing file).
const CudaDriver* cuda_driver(std::string* why = nullptr);

/// The files cuda_driver() tries, in order: $PIPEC_CUDA_LIBRARY alone when set, else libcuda.so.1 on the
/// loader's path and the usual driver mounts (never the toolkit's stub folder).
std::vector<std::string> cuda_driver_candidates();

}  // namespace pipec::gpu

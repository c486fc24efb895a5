// The few CUDA driver API and NVRTC declarations pipec uses, written out here so that the project builds
// without the CUDA headers (CI has none at compile time) and opens the libraries with dlopen at run
// time. The values are the documented ABI of the driver API (cuda.h) and NVRTC (nvrtc.h); only the
// `_v2` entry points whose ABI is 64-bit clean are used.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pipec::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;  // cuStreamQuery: work still running
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 1;

// Driver API signatures (cuda.h), by the symbol names the library exports.
using PFN_cuInit = CUresult (*)(unsigned flags);
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char** str);
using PFN_cuDriverGetVersion = CUresult (*)(int* version);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int len, CUdevice dev);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* value, int attrib, CUdevice dev);
using PFN_cuDeviceTotalMem = CUresult (*)(size_t* bytes, CUdevice dev);  // cuDeviceTotalMem_v2
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* ctx, CUdevice dev);
using PFN_cuDevicePrimaryCtxRelease = CUresult (*)(CUdevice dev);  // cuDevicePrimaryCtxRelease_v2
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext ctx);
using PFN_cuModuleLoadData = CUresult (*)(CUmodule* module, const void* image);
using PFN_cuModuleUnload = CUresult (*)(CUmodule module);
using PFN_cuModuleGetFunction = CUresult (*)(CUfunction* fn, CUmodule module, const char* name);
using PFN_cuMemAlloc = CUresult (*)(CUdeviceptr* ptr, size_t bytes);  // cuMemAlloc_v2
using PFN_cuMemFree = CUresult (*)(CUdeviceptr ptr);                  // cuMemFree_v2
using PFN_cuMemHostAlloc = CUresult (*)(void** ptr, size_t bytes, unsigned flags);
using PFN_cuMemFreeHost = CUresult (*)(void* ptr);
using PFN_cuMemcpyHtoDAsync = CUresult (*)(CUdeviceptr dst, const void* src, size_t bytes, CUstream s);  // _v2
using PFN_cuMemcpyDtoHAsync = CUresult (*)(void* dst, CUdeviceptr src, size_t bytes, CUstream s);        // _v2
using PFN_cuMemcpyDtoDAsync = CUresult (*)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);  // _v2
using PFN_cuStreamCreate = CUresult (*)(CUstream* s, unsigned flags);
using PFN_cuStreamDestroy = CUresult (*)(CUstream s);  // cuStreamDestroy_v2
using PFN_cuStreamSynchronize = CUresult (*)(CUstream s);
using PFN_cuStreamQuery = CUresult (*)(CUstream s);
using PFN_cuStreamWaitEvent = CUresult (*)(CUstream s, CUevent e, unsigned flags);
using PFN_cuEventCreate = CUresult (*)(CUevent* e, unsigned flags);
using PFN_cuEventDestroy = CUresult (*)(CUevent e);  // cuEventDestroy_v2
using PFN_cuEventRecord = CUresult (*)(CUevent e, CUstream s);
using PFN_cuEventSynchronize = CUresult (*)(CUevent e);
using PFN_cuEventElapsedTime = CUresult (*)(float* ms, CUevent start, CUevent end);
using PFN_cuMemsetD8Async = CUresult (*)(CUdeviceptr dst, unsigned char value, size_t count, CUstream s);
using PFN_cuMemGetInfo = CUresult (*)(size_t* free, size_t* total);  // cuMemGetInfo_v2
using PFN_cuLaunchKernel = CUresult (*)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                        unsigned bz, unsigned shared_bytes, CUstream s, void** params, void** extra);

// NVRTC (nvrtc.h).
using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;
using PFN_nvrtcVersion = nvrtcResult (*)(int* major, int* minor);
using PFN_nvrtcGetErrorString = const char* (*)(nvrtcResult r);
using PFN_nvrtcCreateProgram = nvrtcResult (*)(nvrtcProgram* prog, const char* src, const char* name, int num_headers,
                                               const char* const* headers, const char* const* include_names);
using PFN_nvrtcDestroyProgram = nvrtcResult (*)(nvrtcProgram* prog);
using PFN_nvrtcCompileProgram = nvrtcResult (*)(nvrtcProgram prog, int num_options, const char* const* options);
using PFN_nvrtcGetPTXSize = nvrtcResult (*)(nvrtcProgram prog, size_t* size);
using PFN_nvrtcGetPTX = nvrtcResult (*)(nvrtcProgram prog, char* ptx);
using PFN_nvrtcGetProgramLogSize = nvrtcResult (*)(nvrtcProgram prog, size_t* size);
using PFN_nvrtcGetProgramLog = nvrtcResult (*)(nvrtcProgram prog, char* log);

}  // namespace pipec::cuda

// pipec declares the CUDA driver, NVRTC, cuDNN, cuBLASLt and NCCL by hand (runtime/gpu/*_api.h) so that
// it builds anywhere; this file holds those declarations against the real headers where they are
// installed (tests/CMakeLists.txt compiles it only then): every function's type, every constant's value
// and enumeration, and the layout of the structures passed by value. A wrong declaration is a compile
// error here. Run, it prints what it checked.
//
// Enumerations are compared by their ABI (a 32-bit integer), opaque handle types by the real type they
// stand for. pipec's headers come first: cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2,
// CU_MEMHOSTALLOC_PORTABLE) would otherwise rewrite pipec's names.
#include "runtime/gpu/cublaslt_api.h"
#include "runtime/gpu/cuda_api.h"
#include "runtime/gpu/cudnn_api.h"
#include "runtime/gpu/nccl_api.h"

// clang-format off
#include <cuda.h>
#include <nvrtc.h>
#include <cudnn_graph.h>
#include <cublasLt.h>
#include <nccl.h>
// clang-format on

#include <cstddef>
#include <cstdio>
#include <type_traits>

namespace {

// The ABI a real declaration has, in pipec's spelling.
template <class T, class = void>
struct Abi {
  using type = T;
};
template <class T>
struct Abi<T, std::enable_if_t<std::is_enum_v<T> && !std::is_const_v<T>>> {
  static_assert(sizeof(T) == sizeof(int32_t), "an enumeration that is not 32-bit");
  using type = int32_t;
};
template <class T>
struct Abi<T*, void> {
  using type = typename Abi<T>::type*;
};
template <class T>
struct Abi<const T, void> {
  using type = const typename Abi<T>::type;
};
template <class R, class... A>
struct Abi<R (*)(A...), void> {
  using type = typename Abi<R>::type (*)(typename Abi<A>::type...);
};
#define PIPEC_SAME_TYPE(real, ours) \
  template <>                       \
  struct Abi<real, void> {          \
    using type = ours;              \
  };
PIPEC_SAME_TYPE(::CUctx_st, pipec::cuda::CUctx_st)
PIPEC_SAME_TYPE(::CUmod_st, pipec::cuda::CUmod_st)
PIPEC_SAME_TYPE(::CUfunc_st, pipec::cuda::CUfunc_st)
PIPEC_SAME_TYPE(::CUstream_st, pipec::cuda::CUstream_st)
PIPEC_SAME_TYPE(::CUevent_st, pipec::cuda::CUevent_st)
PIPEC_SAME_TYPE(::_nvrtcProgram, pipec::cuda::_nvrtcProgram)
PIPEC_SAME_TYPE(::cudnnContext, pipec::cudnn::cudnnContext)
PIPEC_SAME_TYPE(::cublasLtContext, pipec::cublaslt::cublasLtContext)
PIPEC_SAME_TYPE(::cublasLtMatmulDescOpaque_t, pipec::cublaslt::cublasLtMatmulDescOpaque_t)
PIPEC_SAME_TYPE(::cublasLtMatrixLayoutOpaque_t, pipec::cublaslt::cublasLtMatrixLayoutOpaque_t)
PIPEC_SAME_TYPE(::cublasLtMatmulPreferenceOpaque_t, pipec::cublaslt::cublasLtMatmulPreferenceOpaque_t)
PIPEC_SAME_TYPE(::cublasLtMatmulAlgo_t, pipec::cublaslt::cublasLtMatmulAlgo_t)
PIPEC_SAME_TYPE(::cublasLtMatmulHeuristicResult_t, pipec::cublaslt::cublasLtMatmulHeuristicResult_t)
PIPEC_SAME_TYPE(::ncclComm, pipec::nccl::ncclComm)
PIPEC_SAME_TYPE(::ncclUniqueId, pipec::nccl::ncclUniqueId)
#undef PIPEC_SAME_TYPE

template <class Real, class Ours>
constexpr bool same_abi = std::is_same_v<typename Abi<Real>::type, Ours>;

// The structures pipec passes by value or fills: the same size and field offsets.
using OurResult = pipec::cublaslt::cublasLtMatmulHeuristicResult_t;
static_assert(sizeof(OurResult) == sizeof(::cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(OurResult, algo) == offsetof(::cublasLtMatmulHeuristicResult_t, algo));
static_assert(offsetof(OurResult, workspaceSize) == offsetof(::cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(OurResult, state) == offsetof(::cublasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(OurResult, wavesCount) == offsetof(::cublasLtMatmulHeuristicResult_t, wavesCount));
static_assert(sizeof(pipec::cublaslt::cublasLtMatmulAlgo_t) == sizeof(::cublasLtMatmulAlgo_t));
static_assert(sizeof(pipec::nccl::ncclUniqueId) == sizeof(::ncclUniqueId));
static_assert(pipec::nccl::kUniqueIdBytes == NCCL_UNIQUE_ID_BYTES);
static_assert(std::is_same_v<pipec::cuda::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<pipec::cuda::CUdevice, ::CUdevice>);

// --- cuDNN, cuBLASLt, NCCL: every function and constant of their lists.
#define PIPEC_CHECK_FUNCTION(ns, name)                                    \
  static_assert(same_abi<decltype(&::name), pipec::ns::PFN_##name>, #name \
                " is declared differently "                               \
                "from its header");
#define PIPEC_CHECK_CONSTANT(ns, type, name, value)                                   \
  static_assert(pipec::ns::name == ::name, #name " has another value in its header"); \
  static_assert(std::is_same_v<std::remove_cv_t<decltype(::name)>, ::type>, #name " is not a " #type);

#define PIPEC_CUDNN_FN(name) PIPEC_CHECK_FUNCTION(cudnn, name)
#define PIPEC_CUDNN_CONST(type, name, value) PIPEC_CHECK_CONSTANT(cudnn, type, name, value)
PIPEC_CUDNN_FUNCTIONS(PIPEC_CUDNN_FN)
PIPEC_CUDNN_CONSTANTS(PIPEC_CUDNN_CONST)

#define PIPEC_CUBLASLT_FN(name) PIPEC_CHECK_FUNCTION(cublaslt, name)
#define PIPEC_CUBLASLT_CONST(type, name, value) PIPEC_CHECK_CONSTANT(cublaslt, type, name, value)
PIPEC_CUBLASLT_FUNCTIONS(PIPEC_CUBLASLT_FN)
PIPEC_CUBLASLT_CONSTANTS(PIPEC_CUBLASLT_CONST)

#define PIPEC_NCCL_FN(name) PIPEC_CHECK_FUNCTION(nccl, name)
#define PIPEC_NCCL_CONST(type, name, value) PIPEC_CHECK_CONSTANT(nccl, type, name, value)
PIPEC_NCCL_FUNCTIONS(PIPEC_NCCL_FN)
PIPEC_NCCL_CONSTANTS(PIPEC_NCCL_CONST)

#define PIPEC_COUNT_FN(name) +1
#define PIPEC_COUNT_CONST(type, name, value) +1
constexpr int kListedFunctions = 0 PIPEC_CUDNN_FUNCTIONS(PIPEC_COUNT_FN) PIPEC_CUBLASLT_FUNCTIONS(PIPEC_COUNT_FN)
    PIPEC_NCCL_FUNCTIONS(PIPEC_COUNT_FN);
constexpr int kListedConstants = 0 PIPEC_CUDNN_CONSTANTS(PIPEC_COUNT_CONST) PIPEC_CUBLASLT_CONSTANTS(PIPEC_COUNT_CONST)
    PIPEC_NCCL_CONSTANTS(PIPEC_COUNT_CONST);

// --- The driver and NVRTC (cuda_api.h, which has no lists): each signature by the symbol the loaders
// resolve (cuda.h maps the plain names onto the _v2 ones, as the loaders do).
#define PIPEC_CHECK_DRIVER(ours, real) \
  static_assert(same_abi<decltype(&::real), pipec::cuda::PFN_##ours>, #real " is declared differently from cuda.h");
PIPEC_CHECK_DRIVER(cuInit, cuInit)
PIPEC_CHECK_DRIVER(cuGetErrorString, cuGetErrorString)
PIPEC_CHECK_DRIVER(cuDriverGetVersion, cuDriverGetVersion)
PIPEC_CHECK_DRIVER(cuDeviceGetCount, cuDeviceGetCount)
PIPEC_CHECK_DRIVER(cuDeviceGet, cuDeviceGet)
PIPEC_CHECK_DRIVER(cuDeviceGetName, cuDeviceGetName)
PIPEC_CHECK_DRIVER(cuDeviceGetAttribute, cuDeviceGetAttribute)
PIPEC_CHECK_DRIVER(cuDeviceTotalMem, cuDeviceTotalMem_v2)
PIPEC_CHECK_DRIVER(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)
PIPEC_CHECK_DRIVER(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)
PIPEC_CHECK_DRIVER(cuCtxSetCurrent, cuCtxSetCurrent)
PIPEC_CHECK_DRIVER(cuModuleLoadData, cuModuleLoadData)
PIPEC_CHECK_DRIVER(cuModuleUnload, cuModuleUnload)
PIPEC_CHECK_DRIVER(cuModuleGetFunction, cuModuleGetFunction)
PIPEC_CHECK_DRIVER(cuMemAlloc, cuMemAlloc_v2)
PIPEC_CHECK_DRIVER(cuMemFree, cuMemFree_v2)
PIPEC_CHECK_DRIVER(cuMemHostAlloc, cuMemHostAlloc)
PIPEC_CHECK_DRIVER(cuMemFreeHost, cuMemFreeHost)
PIPEC_CHECK_DRIVER(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2)
PIPEC_CHECK_DRIVER(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2)
PIPEC_CHECK_DRIVER(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2)
PIPEC_CHECK_DRIVER(cuStreamCreate, cuStreamCreate)
PIPEC_CHECK_DRIVER(cuStreamDestroy, cuStreamDestroy_v2)
PIPEC_CHECK_DRIVER(cuStreamSynchronize, cuStreamSynchronize)
PIPEC_CHECK_DRIVER(cuStreamQuery, cuStreamQuery)
PIPEC_CHECK_DRIVER(cuStreamWaitEvent, cuStreamWaitEvent)
PIPEC_CHECK_DRIVER(cuEventCreate, cuEventCreate)
PIPEC_CHECK_DRIVER(cuEventDestroy, cuEventDestroy_v2)
PIPEC_CHECK_DRIVER(cuEventRecord, cuEventRecord)
PIPEC_CHECK_DRIVER(cuEventSynchronize, cuEventSynchronize)
PIPEC_CHECK_DRIVER(cuEventElapsedTime, cuEventElapsedTime)
PIPEC_CHECK_DRIVER(cuLaunchKernel, cuLaunchKernel)
PIPEC_CHECK_DRIVER(nvrtcVersion, nvrtcVersion)
PIPEC_CHECK_DRIVER(nvrtcGetErrorString, nvrtcGetErrorString)
PIPEC_CHECK_DRIVER(nvrtcCreateProgram, nvrtcCreateProgram)
PIPEC_CHECK_DRIVER(nvrtcDestroyProgram, nvrtcDestroyProgram)
PIPEC_CHECK_DRIVER(nvrtcCompileProgram, nvrtcCompileProgram)
PIPEC_CHECK_DRIVER(nvrtcGetPTXSize, nvrtcGetPTXSize)
PIPEC_CHECK_DRIVER(nvrtcGetPTX, nvrtcGetPTX)
PIPEC_CHECK_DRIVER(nvrtcGetProgramLogSize, nvrtcGetProgramLogSize)
PIPEC_CHECK_DRIVER(nvrtcGetProgramLog, nvrtcGetProgramLog)
constexpr int kDriverFunctions = 41;

static_assert(pipec::cuda::CUDA_SUCCESS == ::CUDA_SUCCESS);
static_assert(pipec::cuda::CUDA_ERROR_NO_DEVICE == ::CUDA_ERROR_NO_DEVICE);
static_assert(pipec::cuda::CUDA_ERROR_STUB_LIBRARY == ::CUDA_ERROR_STUB_LIBRARY);
static_assert(pipec::cuda::CUDA_ERROR_NOT_READY == ::CUDA_ERROR_NOT_READY);
static_assert(pipec::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
              ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(pipec::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
              ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(pipec::cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(pipec::cuda::CU_STREAM_NON_BLOCKING == ::CU_STREAM_NON_BLOCKING);
static_assert(pipec::cuda::CU_EVENT_DISABLE_TIMING == ::CU_EVENT_DISABLE_TIMING);
static_assert(pipec::cuda::NVRTC_SUCCESS == ::NVRTC_SUCCESS);
#pragma push_macro("CU_MEMHOSTALLOC_PORTABLE")
#undef CU_MEMHOSTALLOC_PORTABLE
constexpr unsigned kOurPortable = pipec::cuda::CU_MEMHOSTALLOC_PORTABLE;
#pragma pop_macro("CU_MEMHOSTALLOC_PORTABLE")
static_assert(kOurPortable == CU_MEMHOSTALLOC_PORTABLE);
constexpr int kDriverConstants = 11;

}  // namespace

int main() {
  std::printf(
      "checked against the installed headers (cuDNN %d.%d.%d, cuBLASLt %d.%d.%d, NCCL %d.%d.%d, CUDA %d): "
      "%d functions, %d constants, 4 structure layouts\n",
      CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH, NCCL_MAJOR,
      NCCL_MINOR, NCCL_PATCH, CUDA_VERSION, kListedFunctions + kDriverFunctions, kListedConstants + kDriverConstants);
  return 0;
}

// The few cuBLASLt declarations pipec uses (cublasLt.h, with the enumerations it takes from cublas_api.h
// and library_types.h), written out here so that the project builds without CUDA's headers and opens
// the library with dlopen at run time. Enumerations are plain 32-bit integers (their C ABI); each
// constant is listed once in PIPEC_CUBLASLT_CONSTANTS with its enumeration, each function in
// PIPEC_CUBLASLT_FUNCTIONS, and tests/cuda_headers/cuda_api_check.cpp `static_assert`s all of them (and
// the two structures' layouts) against the real headers where they are installed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/gpu/cuda_api.h"

namespace pipec::cublaslt {

struct cublasLtContext;
using cublasLtHandle_t = cublasLtContext*;
struct cublasLtMatmulDescOpaque_t;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
struct cublasLtMatrixLayoutOpaque_t;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
struct cublasLtMatmulPreferenceOpaque_t;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t*;

/// An algorithm as cublasLtMatmulAlgoGetHeuristic returns it (semi-opaque: 64 bytes copied by value).
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};

using cublasStatus_t = int32_t;
using cublasComputeType_t = int32_t;
using cudaDataType_t = int32_t;
using cublasOperation_t = int32_t;
using cublasLtEpilogue_t = int32_t;
using cublasLtReductionScheme_t = int32_t;
using cublasLtMatmulDescAttributes_t = int32_t;
using cublasLtMatmulPreferenceAttributes_t = int32_t;
using cublasLtMatmulAlgoConfigAttributes_t = int32_t;

struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

// X(enumeration, name, value). The attribute values' own C types (int32_t for TRANSA, uint32_t for
// EPILOGUE, ...) are written where each is set (runtime/train/gpu/cublaslt_dense.cpp).
#define PIPEC_CUBLASLT_CONSTANTS(X)                                                      \
  X(cublasStatus_t, CUBLAS_STATUS_SUCCESS, 0)                                            \
  X(cublasStatus_t, CUBLAS_STATUS_INVALID_VALUE, 7)                                      \
  X(cublasStatus_t, CUBLAS_STATUS_NOT_SUPPORTED, 15)                                     \
  X(cublasComputeType_t, CUBLAS_COMPUTE_32F, 68)                                         \
  X(cublasComputeType_t, CUBLAS_COMPUTE_32F_FAST_TF32, 77)                               \
  X(cudaDataType_t, CUDA_R_32F, 0)                                                       \
  X(cudaDataType_t, CUDA_R_16F, 2)                                                       \
  X(cudaDataType_t, CUDA_R_16BF, 14)                                                     \
  X(cublasOperation_t, CUBLAS_OP_N, 0)                                                   \
  X(cublasOperation_t, CUBLAS_OP_T, 1)                                                   \
  X(cublasLtEpilogue_t, CUBLASLT_EPILOGUE_DEFAULT, 1)                                    \
  X(cublasLtEpilogue_t, CUBLASLT_EPILOGUE_BIAS, 4)                                       \
  X(cublasLtEpilogue_t, CUBLASLT_EPILOGUE_RELU_BIAS, 6)                                  \
  X(cublasLtReductionScheme_t, CUBLASLT_REDUCTION_SCHEME_NONE, 0)                        \
  X(cublasLtReductionScheme_t, CUBLASLT_REDUCTION_SCHEME_INPLACE, 1)                     \
  X(cublasLtReductionScheme_t, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, 2)                \
  X(cublasLtReductionScheme_t, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE, 4)                 \
  X(cublasLtMatmulDescAttributes_t, CUBLASLT_MATMUL_DESC_TRANSA, 3)                      \
  X(cublasLtMatmulDescAttributes_t, CUBLASLT_MATMUL_DESC_TRANSB, 4)                      \
  X(cublasLtMatmulDescAttributes_t, CUBLASLT_MATMUL_DESC_EPILOGUE, 7)                    \
  X(cublasLtMatmulDescAttributes_t, CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8)                \
  X(cublasLtMatmulPreferenceAttributes_t, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1)   \
  X(cublasLtMatmulPreferenceAttributes_t, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, 3) \
  X(cublasLtMatmulPreferenceAttributes_t, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 5) \
  X(cublasLtMatmulPreferenceAttributes_t, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 6) \
  X(cublasLtMatmulPreferenceAttributes_t, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 7) \
  X(cublasLtMatmulPreferenceAttributes_t, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 8) \
  X(cublasLtMatmulAlgoConfigAttributes_t, CUBLASLT_ALGO_CONFIG_ID, 0)                    \
  X(cublasLtMatmulAlgoConfigAttributes_t, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 2)            \
  X(cublasLtMatmulAlgoConfigAttributes_t, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, 3)

#define PIPEC_CUBLASLT_DECLARE_CONSTANT(type, name, value) constexpr type name = value;
PIPEC_CUBLASLT_CONSTANTS(PIPEC_CUBLASLT_DECLARE_CONSTANT)
#undef PIPEC_CUBLASLT_DECLARE_CONSTANT

// Signatures (cublasLt.h), by the symbol names libcublasLt exports.
using PFN_cublasLtGetVersion = size_t (*)();
using PFN_cublasLtGetStatusName = const char* (*)(cublasStatus_t status);
using PFN_cublasLtGetStatusString = const char* (*)(cublasStatus_t status);
using PFN_cublasLtCreate = cublasStatus_t (*)(cublasLtHandle_t* handle);
using PFN_cublasLtDestroy = cublasStatus_t (*)(cublasLtHandle_t handle);
using PFN_cublasLtMatmulDescCreate = cublasStatus_t (*)(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                                        cudaDataType_t scale);
using PFN_cublasLtMatmulDescDestroy = cublasStatus_t (*)(cublasLtMatmulDesc_t desc);
using PFN_cublasLtMatmulDescSetAttribute = cublasStatus_t (*)(cublasLtMatmulDesc_t desc,
                                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                              size_t bytes);
using PFN_cublasLtMatrixLayoutCreate = cublasStatus_t (*)(cublasLtMatrixLayout_t* layout, cudaDataType_t type,
                                                          uint64_t rows, uint64_t cols, int64_t ld);
using PFN_cublasLtMatrixLayoutDestroy = cublasStatus_t (*)(cublasLtMatrixLayout_t layout);
using PFN_cublasLtMatmulPreferenceCreate = cublasStatus_t (*)(cublasLtMatmulPreference_t* pref);
using PFN_cublasLtMatmulPreferenceDestroy = cublasStatus_t (*)(cublasLtMatmulPreference_t pref);
using PFN_cublasLtMatmulPreferenceSetAttribute = cublasStatus_t (*)(cublasLtMatmulPreference_t pref,
                                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                                    const void* buf, size_t bytes);
using PFN_cublasLtMatmulAlgoGetHeuristic = cublasStatus_t (*)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                              cublasLtMatmulPreference_t pref, int requested,
                                                              cublasLtMatmulHeuristicResult_t results[], int* returned);
using PFN_cublasLtMatmulAlgoConfigGetAttribute = cublasStatus_t (*)(const cublasLtMatmulAlgo_t* algo,
                                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                                    void* buf, size_t bytes, size_t* written);
using PFN_cublasLtMatmul = cublasStatus_t (*)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                              const void* a, cublasLtMatrixLayout_t a_layout, const void* b,
                                              cublasLtMatrixLayout_t b_layout, const void* beta, const void* c,
                                              cublasLtMatrixLayout_t c_layout, void* d, cublasLtMatrixLayout_t d_layout,
                                              const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                                              cuda::CUstream stream);

#define PIPEC_CUBLASLT_FUNCTIONS(X)       \
  X(cublasLtGetVersion)                   \
  X(cublasLtGetStatusName)                \
  X(cublasLtGetStatusString)              \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulAlgoConfigGetAttribute) \
  X(cublasLtMatmul)

/// The function table the wrappers call through: the loaded library's, or a test's recording fake.
struct CublasLtApi {
#define PIPEC_CUBLASLT_FIELD(name) PFN_##name name = nullptr;
  PIPEC_CUBLASLT_FUNCTIONS(PIPEC_CUBLASLT_FIELD)
#undef PIPEC_CUBLASLT_FIELD
};

}  // namespace pipec::cublaslt

// The few cuDNN 9 declarations pipec uses (the backend graph API of cudnn_graph.h), written out here so
// that the project builds without cuDNN's headers and opens the library with dlopen at run time, as
// cuda_api.h does for the driver. Enumerations are plain 32-bit integers (their C ABI); each constant is
// listed once in PIPEC_CUDNN_CONSTANTS with the enumeration it belongs to, and each function in
// PIPEC_CUDNN_FUNCTIONS, so that tests/cuda_headers/cuda_api_check.cpp can `static_assert` every one of
// them against the real cudnn_graph.h where it is installed (a wrong value or signature fails the build).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/gpu/cuda_api.h"

namespace pipec::cudnn {

struct cudnnContext;
using cudnnHandle_t = cudnnContext*;
using cudnnBackendDescriptor_t = void*;

using cudnnStatus_t = int32_t;
using cudnnDataType_t = int32_t;
using cudnnConvolutionMode_t = int32_t;
using cudnnBackendAttributeName_t = int32_t;
using cudnnBackendAttributeType_t = int32_t;
using cudnnBackendDescriptorType_t = int32_t;
using cudnnBackendNumericalNote_t = int32_t;
using cudnnBackendHeurMode_t = int32_t;

// X(enumeration, name, value)
#define PIPEC_CUDNN_CONSTANTS(X)                                                                      \
  X(cudnnStatus_t, CUDNN_STATUS_SUCCESS, 0)                                                           \
  X(cudnnStatus_t, CUDNN_STATUS_BAD_PARAM, 2000)                                                      \
  X(cudnnStatus_t, CUDNN_STATUS_NOT_SUPPORTED, 3000)                                                  \
  X(cudnnDataType_t, CUDNN_DATA_FLOAT, 0)                                                             \
  X(cudnnDataType_t, CUDNN_DATA_HALF, 2)                                                              \
  X(cudnnDataType_t, CUDNN_DATA_BFLOAT16, 9)                                                          \
  X(cudnnConvolutionMode_t, CUDNN_CROSS_CORRELATION, 1)                                               \
  X(cudnnBackendHeurMode_t, CUDNN_HEUR_MODE_FALLBACK, 2)                                              \
  X(cudnnBackendHeurMode_t, CUDNN_HEUR_MODE_A, 3)                                                     \
  X(cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TENSOR_CORE, 0)                                 \
  X(cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, 1)                         \
  X(cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION, 2)                 \
  X(cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC, 4)                            \
  X(cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, 10)                                 \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, 1)                            \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 2)                                 \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, 3)                              \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, 4)                             \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 5)                         \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, 10)         \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, 11) \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, 12)   \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, 15)                        \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, 16)                          \
  X(cudnnBackendDescriptorType_t, CUDNN_BACKEND_TENSOR_DESCRIPTOR, 17)                                \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_HANDLE, 0)                                                \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_DATA_TYPE, 1)                                             \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_INT64, 3)                                                 \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_FLOAT, 4)                                                 \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_VOID_PTR, 6)                                              \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_CONVOLUTION_MODE, 7)                                      \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_HEUR_MODE, 8)                                             \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_NUMERICAL_NOTE, 11)                                       \
  X(cudnnBackendAttributeType_t, CUDNN_TYPE_BACKEND_DESCRIPTOR, 15)                                   \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, 100)                               \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_CONVOLUTION_CONV_MODE, 101)                               \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_CONVOLUTION_DILATIONS, 102)                               \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 103)                          \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, 104)                           \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 105)                            \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 106)                            \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_ENGINEHEUR_MODE, 200)                                     \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 201)                          \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_ENGINEHEUR_RESULTS, 202)                                  \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_ENGINECFG_ENGINE, 300)                                    \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, 400)                               \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 401)                        \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 402)                       \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 700)                 \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 701)                  \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, 702)             \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, 703)                     \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, 704)                     \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, 705)                     \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 706)                \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, 707)                 \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, 708)            \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, 709)                    \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, 710)                   \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, 711)                   \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 712)              \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, 713)               \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, 714)          \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, 715)                 \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, 716)                  \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, 717)                 \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, 800)                               \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_OPERATIONGRAPH_OPS, 801)                                  \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 900)                               \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_TENSOR_DATA_TYPE, 901)                                    \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_TENSOR_DIMENSIONS, 902)                                   \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_TENSOR_STRIDES, 903)                                      \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 906)                                    \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, 1000)                            \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, 1001)                         \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, 1003)                             \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 1301)                                \
  X(cudnnBackendAttributeName_t, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, 1303)

#define PIPEC_CUDNN_DECLARE_CONSTANT(type, name, value) constexpr type name = value;
PIPEC_CUDNN_CONSTANTS(PIPEC_CUDNN_DECLARE_CONSTANT)
#undef PIPEC_CUDNN_DECLARE_CONSTANT

// Signatures (cudnn_graph.h), by the symbol names libcudnn.so.9 exports.
using PFN_cudnnGetVersion = size_t (*)();
using PFN_cudnnGetErrorString = const char* (*)(cudnnStatus_t status);
using PFN_cudnnGetLastErrorString = void (*)(char* message, size_t max_size);
using PFN_cudnnGraphVersionCheck = cudnnStatus_t (*)();
using PFN_cudnnCreate = cudnnStatus_t (*)(cudnnHandle_t* handle);
using PFN_cudnnDestroy = cudnnStatus_t (*)(cudnnHandle_t handle);
using PFN_cudnnSetStream = cudnnStatus_t (*)(cudnnHandle_t handle, cuda::CUstream stream);
using PFN_cudnnBackendCreateDescriptor = cudnnStatus_t (*)(cudnnBackendDescriptorType_t type,
                                                           cudnnBackendDescriptor_t* descriptor);
using PFN_cudnnBackendDestroyDescriptor = cudnnStatus_t (*)(cudnnBackendDescriptor_t descriptor);
using PFN_cudnnBackendFinalize = cudnnStatus_t (*)(cudnnBackendDescriptor_t descriptor);
using PFN_cudnnBackendSetAttribute = cudnnStatus_t (*)(cudnnBackendDescriptor_t descriptor,
                                                       cudnnBackendAttributeName_t name,
                                                       cudnnBackendAttributeType_t type, int64_t count,
                                                       const void* elements);
using PFN_cudnnBackendGetAttribute = cudnnStatus_t (*)(cudnnBackendDescriptor_t descriptor,
                                                       cudnnBackendAttributeName_t name,
                                                       cudnnBackendAttributeType_t type, int64_t requested,
                                                       int64_t* count, void* elements);
using PFN_cudnnBackendExecute = cudnnStatus_t (*)(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                                  cudnnBackendDescriptor_t variant_pack);

#define PIPEC_CUDNN_FUNCTIONS(X)   \
  X(cudnnGetVersion)               \
  X(cudnnGetErrorString)           \
  X(cudnnGetLastErrorString)       \
  X(cudnnGraphVersionCheck)        \
  X(cudnnCreate)                   \
  X(cudnnDestroy)                  \
  X(cudnnSetStream)                \
  X(cudnnBackendCreateDescriptor)  \
  X(cudnnBackendDestroyDescriptor) \
  X(cudnnBackendFinalize)          \
  X(cudnnBackendSetAttribute)      \
  X(cudnnBackendGetAttribute)      \
  X(cudnnBackendExecute)

/// The function table the wrappers call through: the loaded library's, or a test's recording fake.
struct CudnnApi {
#define PIPEC_CUDNN_FIELD(name) PFN_##name name = nullptr;
  PIPEC_CUDNN_FUNCTIONS(PIPEC_CUDNN_FIELD)
#undef PIPEC_CUDNN_FIELD
};

}  // namespace pipec::cudnn

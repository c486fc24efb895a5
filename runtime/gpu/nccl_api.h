// The few NCCL declarations pipec uses (nccl.h): the version for `pipec doctor`, and what the NCCL
// communicator (runtime/dist/nccl_communicator.h) needs: a communicator from a unique id, the
// all-reduce of a device buffer, and abort when a rank fails or stops answering. Written out here
// so that the project builds without NCCL's header and opens the library with dlopen at run time;
// tests/cuda_headers/cuda_api_check.cpp `static_assert`s every constant, signature and the unique id's
// size against the real nccl.h where it is installed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/gpu/cuda_api.h"

namespace pipec::nccl {

struct ncclComm;
using ncclComm_t = ncclComm*;
constexpr size_t kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct ncclUniqueId {
  char internal[kUniqueIdBytes];
};

using ncclResult_t = int32_t;
using ncclDataType_t = int32_t;
using ncclRedOp_t = int32_t;

// X(enumeration, name, value)
#define PIPEC_NCCL_CONSTANTS(X)      \
  X(ncclResult_t, ncclSuccess, 0)    \
  X(ncclResult_t, ncclInProgress, 7) \
  X(ncclDataType_t, ncclFloat16, 6)  \
  X(ncclDataType_t, ncclFloat32, 7)  \
  X(ncclDataType_t, ncclBfloat16, 9) \
  X(ncclRedOp_t, ncclSum, 0)

#define PIPEC_NCCL_DECLARE_CONSTANT(type, name, value) constexpr type name = value;
PIPEC_NCCL_CONSTANTS(PIPEC_NCCL_DECLARE_CONSTANT)
#undef PIPEC_NCCL_DECLARE_CONSTANT

// Signatures (nccl.h), by the symbol names libnccl.so.2 exports.
using PFN_ncclGetVersion = ncclResult_t (*)(int* version);
using PFN_ncclGetErrorString = const char* (*)(ncclResult_t result);
using PFN_ncclGetUniqueId = ncclResult_t (*)(ncclUniqueId* id);
using PFN_ncclCommInitRank = ncclResult_t (*)(ncclComm_t* comm, int ranks, ncclUniqueId id, int rank);
using PFN_ncclCommDestroy = ncclResult_t (*)(ncclComm_t comm);
using PFN_ncclCommAbort = ncclResult_t (*)(ncclComm_t comm);
using PFN_ncclCommGetAsyncError = ncclResult_t (*)(ncclComm_t comm, ncclResult_t* error);
using PFN_ncclAllReduce = ncclResult_t (*)(const void* send, void* receive, size_t count, ncclDataType_t type,
                                           ncclRedOp_t op, ncclComm_t comm, cuda::CUstream stream);

#define PIPEC_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion)             \
  X(ncclGetErrorString)         \
  X(ncclGetUniqueId)            \
  X(ncclCommInitRank)           \
  X(ncclCommDestroy)            \
  X(ncclCommAbort)              \
  X(ncclCommGetAsyncError)      \
  X(ncclAllReduce)

struct NcclApi {
#define PIPEC_NCCL_FIELD(name) PFN_##name name = nullptr;
  PIPEC_NCCL_FUNCTIONS(PIPEC_NCCL_FIELD)
#undef PIPEC_NCCL_FIELD
};

}  // namespace pipec::nccl

// NCCL as a Communicator: all_reduce of gradient buffers in GPU memory (ncclAllReduce on the caller's
// stream), bootstrapped the way Horovod does it: rank 0 draws the unique id and a control communicator
// (Open MPI across processes, the thread communicator of in-process replicas) broadcasts it, then every
// rank joins. The small collectives of a step (the batch agreement, the loss, checkpoints' iterator
// states) stay on the control communicator in host memory.
//
// NCCL reduces in its own order (ReductionOrder::Library only). The watchdog polls the stream and
// NCCL's asynchronous error; past the timeout the communicator is aborted (ncclCommAbort): NCCL cannot
// say which rank is missing. Calls need the device's CUDA context current on the calling thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/dist/communicator.h"
#include "runtime/gpu/cuda_api.h"
#include "runtime/gpu/nccl_api.h"

namespace pipec {

/// The stream NCCL's collectives run on, and how to ask whether its work is done (cuStreamQuery:
/// CUDA_SUCCESS, CUDA_ERROR_NOT_READY while it runs, an error otherwise).
struct NcclStream {
  cuda::CUstream stream = nullptr;
  std::function<cuda::CUresult(cuda::CUstream)> query;
};

/// Rank control.rank() of control.size() joins one NCCL communicator (every rank calls this at once).
/// `api` and `control` must outlive it. Throws CollectiveError when NCCL refuses (the message is
/// NCCL's), std::invalid_argument for ReductionOrder::Ranks.
std::unique_ptr<Communicator> make_nccl_communicator(const nccl::NcclApi& api, Communicator& control, NcclStream stream,
                                                     const CollectiveOptions& options);

}  // namespace pipec

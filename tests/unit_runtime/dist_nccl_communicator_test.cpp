// The NCCL communicator against a fake NCCL (a function table like the one nccl_loader fills): the
// unique id drawn by rank 0 reaches every rank through the control communicator, all_reduce calls
// ncclAllReduce in place on the stream and waits for it, the small collectives stay on the control
// communicator, a stream that never finishes ends in the watchdog's error and ncclCommAbort, and the
// rank-order mode is refused. On a GPU: tests/gpu/gpu_nccl_test.cpp (the real library, one rank).
#include "runtime/dist/nccl_communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "runtime/dist/thread_communicator.h"

namespace pipec {

namespace {

// The fake's world: the ranks' ids and a thread communicator that does the sums.
std::vector<std::unique_ptr<Communicator>>* g_sum = nullptr;
std::vector<std::string> g_ids;
std::atomic<int> g_aborts{0}, g_destroys{0}, g_allreduces{0};
std::atomic<bool> g_stream_hangs{false};
thread_local int t_polls = 0;

nccl::ncclComm_t comm_of(int rank) { return reinterpret_cast<nccl::ncclComm_t>(static_cast<uintptr_t>(rank + 1)); }
int rank_of(nccl::ncclComm_t c) { return static_cast<int>(reinterpret_cast<uintptr_t>(c)) - 1; }

nccl::ncclResult_t fake_version(int* v) {
  *v = 22809;
  return nccl::ncclSuccess;
}
const char* fake_error(nccl::ncclResult_t) { return "fake NCCL failure"; }
nccl::ncclResult_t fake_unique_id(nccl::ncclUniqueId* id) {
  std::memset(id, 0, sizeof *id);
  std::strcpy(id->internal, "unique id of rank 0");
  return nccl::ncclSuccess;
}
nccl::ncclResult_t fake_init_rank(nccl::ncclComm_t* comm, int ranks, nccl::ncclUniqueId id, int rank) {
  if (ranks != static_cast<int>(g_sum->size())) return 5;  // ncclInvalidArgument
  g_ids[rank] = id.internal;
  *comm = comm_of(rank);
  return nccl::ncclSuccess;
}
nccl::ncclResult_t fake_destroy(nccl::ncclComm_t) {
  ++g_destroys;
  return nccl::ncclSuccess;
}
nccl::ncclResult_t fake_abort(nccl::ncclComm_t) {
  ++g_aborts;
  return nccl::ncclSuccess;
}
nccl::ncclResult_t fake_async_error(nccl::ncclComm_t, nccl::ncclResult_t* e) {
  *e = nccl::ncclSuccess;
  return nccl::ncclSuccess;
}
nccl::ncclResult_t fake_all_reduce(const void* send, void* receive, size_t count, nccl::ncclDataType_t type,
                                   nccl::ncclRedOp_t op, nccl::ncclComm_t comm, cuda::CUstream) {
  if (send != receive || type != nccl::ncclFloat32 || op != nccl::ncclSum) return 5;
  ++g_allreduces;
  (*g_sum)[rank_of(comm)]->all_reduce(static_cast<float*>(receive), count, "fake ncclAllReduce");
  t_polls = 0;
  return nccl::ncclSuccess;
}
// The stream is busy for two polls, then done (or never, to test the watchdog).
cuda::CUresult fake_query(cuda::CUstream) {
  if (g_stream_hangs) return cuda::CUDA_ERROR_NOT_READY;
  return t_polls++ < 2 ? cuda::CUDA_ERROR_NOT_READY : cuda::CUDA_SUCCESS;
}

nccl::NcclApi fake_api() {
  nccl::NcclApi a;
  a.ncclGetVersion = fake_version;
  a.ncclGetErrorString = fake_error;
  a.ncclGetUniqueId = fake_unique_id;
  a.ncclCommInitRank = fake_init_rank;
  a.ncclCommDestroy = fake_destroy;
  a.ncclCommAbort = fake_abort;
  a.ncclCommGetAsyncError = fake_async_error;
  a.ncclAllReduce = fake_all_reduce;
  return a;
}

// Runs body on `ranks` threads, each with an NCCL communicator over a thread control communicator.
std::vector<std::string> run_ranks(int ranks, const CollectiveOptions& o,
                                   const std::function<void(Communicator&)>& body) {
  auto control = make_thread_communicators(ranks);
  auto sums = make_thread_communicators(ranks);
  g_sum = &sums;
  g_ids.assign(ranks, "");
  const nccl::NcclApi api = fake_api();
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        auto c = make_nccl_communicator(api, *control[r], NcclStream{nullptr, fake_query}, o);
        body(*c);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  g_sum = nullptr;
  return errors;
}

CollectiveOptions library() {
  CollectiveOptions o;
  o.order = ReductionOrder::Library;
  return o;
}

}  // namespace

TEST(NcclCommunicator, UniqueIdFromRankZeroThenAllReduceOnTheStream) {
  g_destroys = 0;
  g_allreduces = 0;
  std::vector<std::vector<float>> buffers = {{1, 2, 3}, {10, 20, 30}};
  std::vector<std::vector<double>> gathered(2);
  auto errors = run_ranks(2, library(), [&](Communicator& c) {
    EXPECT_TRUE(c.device_buffers());
    EXPECT_NE(c.description().find("NCCL 2.28.9, 2 ranks"), std::string::npos) << c.description();
    c.all_reduce(buffers[c.rank()].data(), 3, "bucket 0");
    const double mine = c.rank() + 0.5;
    gathered[c.rank()] = c.all_gather(&mine, 1, "agreement");
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(buffers[r], (std::vector<float>{11, 22, 33}));
    EXPECT_EQ(g_ids[r], "unique id of rank 0");
    EXPECT_EQ(gathered[r], (std::vector<double>{0.5, 1.5}));
  }
  EXPECT_EQ(g_allreduces.load(), 2);
  EXPECT_EQ(g_destroys.load(), 2);
}

TEST(NcclCommunicator, AStreamThatNeverFinishesAbortsTheCommunicator) {
  g_aborts = 0;
  g_stream_hangs = true;
  CollectiveOptions o = library();
  o.timeout_seconds = 0.1;
  auto errors = run_ranks(1, o, [&](Communicator& c) {
    float x = 1;
    c.all_reduce(&x, 1, "gradient bucket 0 of 1, step 3");
  });
  g_stream_hangs = false;
  EXPECT_NE(errors[0].find("gradient bucket 0 of 1, step 3 did not complete within 0.1 s"), std::string::npos)
      << errors[0];
  EXPECT_EQ(g_aborts.load(), 1);
}

TEST(NcclCommunicator, RankOrderNeedsHostBuffers) {
  auto errors = run_ranks(1, CollectiveOptions{}, [](Communicator&) {});
  EXPECT_NE(errors[0].find("NCCL reduces in its own order"), std::string::npos) << errors[0];
}

}  // namespace pipec

#include "runtime/dist/nccl_communicator.h"

#include <chrono>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "runtime/gpu/nccl_loader.h"

namespace pipec {

namespace {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const nccl::NcclApi& api, Communicator& control, NcclStream stream, const CollectiveOptions& o)
      : api_(api), control_(control), stream_(std::move(stream)), options_(o) {
    // The unique id: drawn by rank 0, sent to the others over the control communicator.
    nccl::ncclUniqueId id{};
    if (control_.rank() == 0) check(api_.ncclGetUniqueId(&id), "ncclGetUniqueId");
    control_.broadcast(&id, sizeof id, 0, "the NCCL unique id");
    check(api_.ncclCommInitRank(&comm_, control_.size(), id, control_.rank()), "ncclCommInitRank");
    int version = 0;
    if (api_.ncclGetVersion(&version) == nccl::ncclSuccess) version_ = gpu::nccl_version_string(version);
  }
  ~NcclCommunicator() override {
    if (comm_ && !aborted_) api_.ncclCommDestroy(comm_);
  }

  int rank() const override { return control_.rank(); }
  int size() const override { return control_.size(); }
  std::string description() const override {
    return fmt::format("NCCL {}, {} rank{} (control: {})", version_, size(), size() == 1 ? "" : "s",
                       control_.description());
  }
  bool device_buffers() const override { return true; }

  void all_reduce(float* data, size_t n, std::string_view what) override {
    if (n == 0) return;
    check(api_.ncclAllReduce(data, data, n, nccl::ncclFloat32, nccl::ncclSum, comm_, stream_.stream), what);
    wait(what);
  }
  std::vector<double> all_gather(const double* mine, size_t n, std::string_view what) override {
    return control_.all_gather(mine, n, what);
  }
  void broadcast(void* data, size_t bytes, int root, std::string_view what) override {
    control_.broadcast(data, bytes, root, what);
  }
  std::vector<std::string> gather(const std::string& mine, int root, std::string_view what) override {
    return control_.gather(mine, root, what);
  }
  std::string scatter(const std::vector<std::string>& parts, int root, std::string_view what) override {
    return control_.scatter(parts, root, what);
  }
  void barrier(std::string_view what) override { control_.barrier(what); }

  void abort(const std::string& message) override {
    if (comm_ && !aborted_) api_.ncclCommAbort(comm_);
    aborted_ = true;
    control_.abort(message);
  }

 private:
  void check(nccl::ncclResult_t r, std::string_view what) {
    if (r == nccl::ncclSuccess) return;
    const char* text = api_.ncclGetErrorString ? api_.ncclGetErrorString(r) : nullptr;
    throw CollectiveError(fmt::format("rank {}: {} failed in NCCL: {} (error {})", control_.rank(), what,
                                      text ? text : "no description", r));
  }

  // The stream polled until the collective is done, NCCL's asynchronous error checked between polls.
  void wait(std::string_view what) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    for (int round = 0;; ++round) {
      const cuda::CUresult r = stream_.query(stream_.stream);
      if (r == cuda::CUDA_SUCCESS) return;
      if (r != cuda::CUDA_ERROR_NOT_READY)
        throw CollectiveError(fmt::format("rank {}: {}: the GPU stream failed (CUDA error {})", rank(), what, r));
      nccl::ncclResult_t async = nccl::ncclSuccess;
      api_.ncclCommGetAsyncError(comm_, &async);
      if (async != nccl::ncclSuccess && async != nccl::ncclInProgress) check(async, what);
      if (clock::now() - start > std::chrono::duration<double>(options_.timeout_seconds)) {
        api_.ncclCommAbort(comm_);
        aborted_ = true;
        throw CollectiveError(
            fmt::format("rank {}: {} did not complete within {:g} s: a rank did not take part "
                        "(NCCL cannot say which); the NCCL communicator was aborted",
                        rank(), what, options_.timeout_seconds));
      }
      if (round > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  const nccl::NcclApi& api_;
  Communicator& control_;
  NcclStream stream_;
  CollectiveOptions options_;
  nccl::ncclComm_t comm_ = nullptr;
  std::string version_ = "?";
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const nccl::NcclApi& api, Communicator& control, NcclStream stream,
                                                     const CollectiveOptions& options) {
  if (options.order == ReductionOrder::Ranks)
    throw std::invalid_argument(
        "NCCL reduces in its own order: --reduction ranks (pipec's rank-order sum) needs host buffers");
  return std::make_unique<NcclCommunicator>(api, control, std::move(stream), options);
}

}  // namespace pipec

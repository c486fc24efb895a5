// Collectives behind one interface: what data-parallel training needs of the transport between its
// replicas (runtime/train/data_parallel.h). Three implementations: in-process replicas on threads
// (thread_communicator.h: `mirrored` on the CPU, and the tests), Open MPI (mpi_communicator.h: one rank
// per process under mpirun, `multi_worker()`) and NCCL (nccl_communicator.h: buffers on GPUs).
//
// Every rank calls the same collectives in the same order (the training loop emits a fixed sequence per
// step: the batch agreement, the gradient buckets in backward order, the loss), so a hang is a bug by
// construction, and one that happens anyway (a rank killed, stopped or stuck) is caught by the
// watchdog: a collective that has not completed within the timeout throws CollectiveError naming the
// ranks that did not take part, where the transport can tell (the rank-order modes can; MPI's and NCCL's
// own all-reduce cannot).
//
// Reduction order. In ReductionOrder::Ranks (the default) every element is summed in rank order,
// ((x0 + x1) + x2) + ..., whatever the transport: N MPI ranks give the bits N in-process replicas give.
// ReductionOrder::Library uses the transport's own all-reduce (MPI_Allreduce, ncclAllReduce): its order
// is the library's, so results may differ in the last bits between transports and rank counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pipec {

/// A collective that could not complete: a peer failed (the message is its own), stopped answering
/// (the watchdog), or the communicator was aborted.
class CollectiveError : public std::runtime_error {
 public:
  explicit CollectiveError(const std::string& message, int failed_rank = -1)
      : std::runtime_error(message), failed_rank_(failed_rank) {}
  /// The rank at fault when it is known (the one that failed, or the first that did not answer), else -1.
  int failed_rank() const { return failed_rank_; }

 private:
  int failed_rank_;
};

enum class ReductionOrder {
  Ranks,    // pipec's own: each element summed in rank order (bit-identical across transports)
  Library,  // the transport's own all-reduce (MPI_Allreduce, ncclAllReduce)
};

/// "ranks" or "library" (the --reduction flag's words).
const char* reduction_order_name(ReductionOrder o);

struct CollectiveOptions {
  /// The watchdog: a collective not complete after this many seconds fails, naming the ranks that did
  /// not take part (`pipec run --collective-timeout`).
  double timeout_seconds = 60;
  ReductionOrder order = ReductionOrder::Ranks;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// What `pipec run`'s summary says it is ("2 in-process replicas", "Open MPI v4.1.4, 4 ranks").
  virtual std::string description() const = 0;
  /// Whether all_reduce's buffers are device memory (NCCL) rather than host memory.
  virtual bool device_buffers() const { return false; }

  /// Sums `n` floats over the ranks, in place: every rank ends with the same bits. `what` names the
  /// collective in a watchdog's message ("gradient bucket 2 of 5, step 13").
  virtual void all_reduce(float* data, size_t n, std::string_view what) = 0;
  /// Every rank's `n` values, in rank order (rank r's at [r * n, r * n + n)): the small facts of a
  /// step (the batch agreement, the loss), which the caller reduces itself, in rank order.
  virtual std::vector<double> all_gather(const double* mine, size_t n, std::string_view what) = 0;
  /// `bytes` bytes at `data` on rank `root` copied to `data` on every other rank (host memory).
  virtual void broadcast(void* data, size_t bytes, int root, std::string_view what) = 0;
  /// Every rank's bytes, in rank order, on `root`; an empty vector on the other ranks.
  virtual std::vector<std::string> gather(const std::string& mine, int root, std::string_view what) = 0;
  /// gather() reversed: `parts[r]` of `root` to rank r, which gets it back (`parts` is read on `root` only,
  /// where it must hold size() strings). A checkpoint's input positions, one per rank, go back this way.
  virtual std::string scatter(const std::vector<std::string>& parts, int root, std::string_view what) = 0;
  virtual void barrier(std::string_view what) = 0;

  /// This rank failed with `message`: stops every rank. Under MPI the job ends (MPI_Abort) and this
  /// never returns; in process, every other replica's current or next collective throws
  /// CollectiveError with the message, and this returns so that the caller can throw its own error.
  virtual void abort(const std::string& message) = 0;
};

/// broadcast() of a string whose length only the root knows.
std::string broadcast_string(Communicator& c, const std::string& s, int root, std::string_view what);
/// broadcast() of a float vector of the same length on every rank.
void broadcast_floats(Communicator& c, std::vector<float>& v, int root, std::string_view what);

}  // namespace pipec

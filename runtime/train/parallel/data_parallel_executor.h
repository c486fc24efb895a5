// Data-parallel training behind the StepExecutor interface: the training loop hands it a batch as it
// would hand one executor, and it trains this process's replicas on it, each an executor of its own
// (reference, fast or GPU) with a communicator to the others (runtime/dist: in-process threads, Open MPI
// ranks, NCCL). A step, on every replica at once:
//   1. the replicas agree on their rows (one all_gather): this process's batch is split into nearly
//      equal shares, in order, one per local replica, and each replica learns where its share starts
//      among all replicas' rows: dropout keys each example by that global index
//      (StepExecutor::set_first_example), so N replicas draw the masks one replica would;
//   2. forward and loss on its share; a second all_gather gives every replica every loss, and the
//      step's loss is their mean weighted by rows, summed in rank order (the same bits everywhere);
//   3. the backward pass; each gradient bucket (gradient_buckets.h) is multiplied by the replica's share
//      of the rows and all-reduced (summed) as soon as its last writer has run, on the replica's
//      bucket thread, while the backward pass goes on: the sum is the whole batch's mean gradient, a
//      short last batch weighted by its rows;
//   4. the optimizer's update from the same gradients, so the replicas' weights stay equal bit for bit.
// A replica whose share is empty (a last batch with fewer rows than replicas) takes no step: it adds
// zeros to the sums and copies a trained replica's state afterwards. When the step's loss is not
// finite under a dynamic loss scale, every replica makes its gradients non-finite before the sum, so
// all of them skip the step alike.
//
// batch_norm's moving statistics follow each replica's own batches during the steps (Keras' default
// for mirrored variables of this kind) and are averaged over all replicas at sync_to_host() (before
// every checkpoint, evaluation and --save): every replica then holds the average. buffers(),
// optimizer_slots() and loss_scale() are replica 0's; sync_to_device() makes every replica's state
// replica 0's of global rank 0 (a broadcast between processes).
//
// A replica that throws aborts its communicator, so the others' collectives end with its message
// instead of hanging; the step rethrows the first error that is not such a consequence.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/dist/communicator.h"
#include "runtime/train/parallel/gradient_buckets.h"
#include "runtime/train/parallel/serial_worker.h"
#include "runtime/train/step_executor.h"

namespace pipec {

struct DataParallelOptions {
  int64_t bucket_bytes = kDefaultBucketBytes;
  /// Start each bucket's all-reduce as soon as it is final (where the executor reports its nodes);
  /// false: all of them after the backward pass.
  bool overlap = true;
};

/// When each bucket of the last step was handed to its thread, and when its all-reduce started and
/// ended, relative to that step's backward pass on replica 0 (the overlap test reads it; the summary
/// could). `launched` is the replica's own decision; `started` also holds how soon the bucket thread
/// was scheduled, which on a loaded machine may be after the backward pass.
struct BucketTimes {
  double backward_end = 0;                       // seconds from the backward pass's start
  std::vector<double> launched, started, ended;  // per bucket, seconds from the backward pass's start
};

/// Communicators made as unique_ptrs (make_thread_communicators, make_mpi_communicator), shared: the
/// executor holds them, and a driver may hold one too, to abort the others when its run fails.
std::vector<std::shared_ptr<Communicator>> shared_communicators(std::vector<std::unique_ptr<Communicator>> c);

class DataParallelExecutor final : public StepExecutor {
 public:
  /// Makes the executor of one replica, for `replica_graph`.
  using MakeReplica = std::function<std::unique_ptr<StepExecutor>(const ModelGraph& replica_graph, uint64_t seed)>;

  /// `g`: the step graph for this process's whole batch (the training loop's); each of the
  /// `communicators.size()` local replicas gets an executor of a copy of it with its share of g.batch,
  /// and one communicator (all of one group, whose size counts the replicas of every process). Any batch
  /// splits (the strategy is what asks the user for one that splits evenly).
  DataParallelExecutor(const ModelGraph& g, uint64_t seed, std::vector<std::shared_ptr<Communicator>> communicators,
                       const MakeReplica& make, DataParallelOptions options = {});
  ~DataParallelExecutor() override;

  std::string description() const override;
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds = nullptr) override;
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr) override;
  FlatBuffers<float>& buffers() override;
  OptimizerSlots<float>& optimizer_slots() override;
  void sync_to_host() override;
  void sync_to_device() override;
  LossScale* loss_scale() override;
  /// A value with a row per example: every local replica's rows, in order (this process's batch);
  /// another value (a loss, a weight): replica 0's.
  Tensor host_value(int id) override;
  const StepArena& arena() const override;
  /// The global index of this process's first example; its replicas' shares follow.
  void set_first_example(int64_t first) override { first_example_ = first; }

  /// Whether every process has a batch for the next step (one all-gather; TrainOptions::all_have_batch).
  bool all_have_batch(bool mine);

  /// The last step's rows over every replica of every process.
  int64_t step_rows() const { return step_rows_; }

  int local_replicas() const { return static_cast<int>(replicas_.size()); }
  /// Local replica `r`'s executor (tests compare the replicas' states).
  StepExecutor& replica(int r);
  const std::vector<GradientBucket>& buckets() const { return buckets_; }
  const BucketTimes& last_bucket_times() const { return times_; }
  /// Seconds replica 0's buckets spent in all-reduce over every step, and of the steps' time the part
  /// spent waiting for them after the backward pass ended (what the overlap did not hide).
  double reduce_seconds() const { return reduce_seconds_; }
  double exposed_reduce_seconds() const { return exposed_seconds_; }

 private:
  struct Replica;
  // Runs job(r) on every local replica at once (replica 0 on this thread); a replica that throws aborts
  // its communicator. Rethrows the first error that is not another replica's abort.
  void on_every_replica(const std::function<void(Replica&)>& job);
  void backward_and_reduce(Replica& r, uint64_t step, PhaseSeconds* seconds);
  /// `from`'s host copies (buffers, optimizer slots, loss scale) into `to`'s.
  static void copy_host_state(StepExecutor& from, StepExecutor& to);
  /// A replica's whole state into another's, through their host copies.
  void copy_state(const Replica& from, Replica& to);

  ModelGraph replica_graph_;
  DataParallelOptions options_;
  std::vector<GradientBucket> buckets_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  int64_t first_example_ = 0;
  int world_ = 1;  // replicas of every process
  double loss_ = 0;
  int done_ = -1;          // the last phase run on the current batch (an OpCategory), -1 before the first
  int64_t step_rows_ = 0;  // the last step's rows over every replica
  BucketTimes times_;
  double reduce_seconds_ = 0, exposed_seconds_ = 0;
};

}  // namespace pipec

#include "runtime/train/parallel/data_parallel_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

struct DataParallelExecutor::Replica {
  int index = 0;  // among this process's replicas
  std::unique_ptr<StepExecutor> executor;
  std::shared_ptr<Communicator> comm;
  std::unique_ptr<SerialWorker> step_thread;  // null for replica 0, which runs on the caller's thread
  SerialWorker bucket_thread;                 // the all-reduces of its gradient buckets
  // The step: this replica's share of the batch and where it starts among every replica's rows.
  std::vector<Tensor> inputs;
  Tensor target;
  bool has_target = false;
  int64_t rows = 0;
  int64_t first = 0;
  float weight = 0;        // rows / the step's rows over every replica
  size_t next_bucket = 0;  // the next bucket to hand to bucket_thread
  bool poison = false;     // make the gradients non-finite before the sum (see the header)
  double loss = 0;
};

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Rank 0's floats to every rank, resized to rank 0's count first: after a resume rank 0 alone has read
// the optimizer's slots, and the others have none before their first step.
void broadcast_resized(Communicator& c, std::vector<float>& v, std::string_view what) {
  uint64_t n = v.size();
  c.broadcast(&n, sizeof n, 0, what);
  v.resize(n);
  broadcast_floats(c, v, 0, what);
}

}  // namespace

std::vector<std::shared_ptr<Communicator>> shared_communicators(std::vector<std::unique_ptr<Communicator>> c) {
  std::vector<std::shared_ptr<Communicator>> out;
  for (auto& p : c) out.push_back(std::move(p));
  return out;
}

DataParallelExecutor::DataParallelExecutor(const ModelGraph& g, uint64_t seed,
                                           std::vector<std::shared_ptr<Communicator>> communicators,
                                           const MakeReplica& make, DataParallelOptions options)
    : replica_graph_(g), options_(options) {
  if (communicators.empty()) throw std::invalid_argument("data-parallel training needs at least one replica");
  const int64_t n = static_cast<int64_t>(communicators.size());
  // The largest share of a batch (the strategy asks for batches that split evenly; a short last batch
  // splits as evenly as it can).
  if (g.batch > 0) replica_graph_.batch = (g.batch + n - 1) / n;
  world_ = communicators[0]->size();
  buckets_ = plan_gradient_buckets(replica_graph_, options_.bucket_bytes);
  for (int64_t r = 0; r < n; ++r) {
    auto rep = std::make_unique<Replica>();
    rep->index = static_cast<int>(r);
    rep->comm = std::move(communicators[static_cast<size_t>(r)]);
    rep->executor = make(replica_graph_, seed);
    if (r > 0) rep->step_thread = std::make_unique<SerialWorker>();
    replicas_.push_back(std::move(rep));
  }
}

DataParallelExecutor::~DataParallelExecutor() {
  // Each replica's executor goes on the thread that ran it: oneDNN keeps a scratchpad per thread, freed
  // when the last primitive that used it goes on that thread (one destroyed elsewhere leaves it behind).
  for (size_t k = 1; k < replicas_.size(); ++k) {
    Replica& r = *replicas_[k];
    r.step_thread->post([&r] { r.executor.reset(); });
    try {
      r.step_thread->drain();
    } catch (...) {
      // A destructor that threw: nothing left to do with it here.
    }
  }
}

StepExecutor& DataParallelExecutor::replica(int r) { return *replicas_.at(static_cast<size_t>(r))->executor; }

std::string DataParallelExecutor::description() const {
  const Replica& r0 = *replicas_.front();
  const std::string where =
      local_replicas() == world_
          ? fmt::format("{} replica{} ({})", world_, world_ == 1 ? "" : "s", r0.comm->description())
          : fmt::format("{} of {} replicas in this process ({})", local_replicas(), world_, r0.comm->description());
  return fmt::format(
      "data-parallel, {}, gradients in {} bucket{} (all-reduce {:.3f} s, {:.3f} s of it after the backward pass); "
      "each replica: {}",
      where, buckets_.size(), buckets_.size() == 1 ? "" : "s", reduce_seconds_, exposed_seconds_,
      r0.executor->description());
}

void DataParallelExecutor::on_every_replica(const std::function<void(Replica&)>& job) {
  auto guarded = [&job](Replica& r) {
    try {
      job(r);
    } catch (const CollectiveError&) {
      throw;  // another replica's failure, or the watchdog: the communicator says so to the others
    } catch (const std::exception& e) {
      r.comm->abort(e.what());
      throw;
    }
  };
  for (size_t k = 1; k < replicas_.size(); ++k) {
    Replica& r = *replicas_[k];
    r.step_thread->post([&guarded, &r] { guarded(r); });
  }
  std::exception_ptr first_error, first_collective;
  auto note = [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const CollectiveError&) {
      if (!first_collective) first_collective = e;
    } catch (...) {
      if (!first_error) first_error = e;
    }
  };
  try {
    guarded(*replicas_.front());
  } catch (...) {
    note(std::current_exception());
  }
  for (size_t k = 1; k < replicas_.size(); ++k) {
    try {
      replicas_[k]->step_thread->drain();
    } catch (...) {
      note(std::current_exception());
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  if (first_collective) std::rethrow_exception(first_collective);
}

double DataParallelExecutor::run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step,
                                 OpCategory last, PhaseSeconds* seconds) {
  const int64_t rows = !inputs.empty() ? inputs[0].shape().at(0) : target ? target->shape().at(0) : 0;
  const int64_t n = local_replicas();
  // Nearly equal shares, in order: the first rows % n replicas take one row more.
  int64_t start = 0;
  for (int64_t k = 0; k < n; ++k) {
    Replica& r = *replicas_[static_cast<size_t>(k)];
    r.rows = rows / n + (k < rows % n ? 1 : 0);
    r.inputs.clear();
    for (const Tensor& t : inputs) r.inputs.push_back(t.rows_view(start, start + r.rows));
    r.has_target = target != nullptr;
    r.target = target ? target->rows_view(start, start + r.rows) : Tensor();
    start += r.rows;
  }
  std::vector<PhaseSeconds> phase(replicas_.size(), PhaseSeconds{});
  done_ = -1;
  on_every_replica([&](Replica& r) {
    // 1. Every replica's rows: where this one's share starts, and the step's total.
    const double mine = static_cast<double>(r.rows);
    const std::vector<double> all_rows =
        r.comm->all_gather(&mine, 1, fmt::format("the batch's rows, step {}", step + 1));
    int64_t before = 0, total = 0;
    for (size_t q = 0; q < all_rows.size(); ++q) {
      if (static_cast<int>(q) < r.comm->rank()) before += static_cast<int64_t>(all_rows[q]);
      total += static_cast<int64_t>(all_rows[q]);
    }
    r.first = first_example_ + before;
    if (r.index == 0) step_rows_ = total;
    r.weight = total > 0 ? static_cast<float>(static_cast<double>(r.rows) / static_cast<double>(total)) : 0.0f;
    // 2. Forward and loss on the share.
    r.loss = 0;
    if (r.rows > 0) {
      r.executor->set_first_example(r.first);
      r.loss = r.executor->run(r.inputs, r.has_target ? &r.target : nullptr, step,
                               last < OpCategory::Loss ? last : OpCategory::Loss, &phase[static_cast<size_t>(r.index)]);
    }
    if (last < OpCategory::Loss) return;
    // The step's loss: the losses weighted by rows, summed in rank order (the same bits everywhere).
    const double part[2] = {r.loss * mine, mine};
    const std::vector<double> all = r.comm->all_gather(part, 2, fmt::format("the loss, step {}", step + 1));
    double sum = 0, count = 0;
    for (size_t q = 0; q < all.size(); q += 2)
      if (all[q + 1] > 0) sum += all[q], count += all[q + 1];
    const double loss = count > 0 ? sum / count : 0;
    r.poison = !std::isfinite(loss) && r.executor->loss_scale() != nullptr;
    if (r.index == 0) loss_ = loss;
  });
  if (seconds)
    for (size_t p = 0; p < seconds->size(); ++p) (*seconds)[p] += phase[0][p];
  done_ = static_cast<int>(std::min(last, OpCategory::Loss));
  if (last > OpCategory::Loss) return resume(step, last, seconds);
  return loss_;
}

void DataParallelExecutor::backward_and_reduce(Replica& r, uint64_t step, PhaseSeconds* seconds) {
  FlatBuffers<float>& buf = r.executor->buffers();
  LossScale* loss_scale = r.executor->loss_scale();
  const bool weighted_by_seed = loss_scale != nullptr;
  r.next_bucket = 0;
  const Clock::time_point backward_start = Clock::now();
  const bool timed = r.index == 0;
  if (timed) {
    times_.launched.assign(buckets_.size(), 0);
    times_.started.assign(buckets_.size(), 0);
    times_.ended.assign(buckets_.size(), 0);
  }
  // A bucket whose gradients are final: weighted by the replica's share, then summed on the bucket
  // thread. Buckets go in order, so every replica calls the same collectives in the same order.
  auto launch = [&](size_t b) {
    const GradientBucket& bucket = buckets_[b];
    float* data = buf.grads.data() + bucket.begin;
    const size_t count = static_cast<size_t>(bucket.end - bucket.begin);
    if (!weighted_by_seed)
      for (size_t i = 0; i < count; ++i) data[i] *= r.weight;
    if (r.poison && b == 0 && count > 0) data[0] = std::numeric_limits<float>::quiet_NaN();
    const std::string what = fmt::format("gradient bucket {} of {}, step {}", b + 1, buckets_.size(), step + 1);
    if (timed) times_.launched[b] = seconds_between(backward_start, Clock::now());
    r.bucket_thread.post([this, &r, data, count, what, b, timed, backward_start] {
      if (timed) times_.started[b] = seconds_between(backward_start, Clock::now());
      r.comm->all_reduce(data, count, what);
      if (timed) times_.ended[b] = seconds_between(backward_start, Clock::now());
    });
  };
  auto launch_final = [&](int done_node) {
    while (r.next_bucket < buckets_.size() && buckets_[r.next_bucket].last_writer <= done_node) launch(r.next_bucket++);
  };
  if (r.rows > 0) {
    const bool observed =
        options_.overlap && r.executor->observe_nodes([&](size_t node) { launch_final(static_cast<int>(node)); });
    // Under a dynamic loss scale the backward pass starts from loss x scale x the replica's share of
    // the rows, so that its 16-bit gradients have the magnitudes one executor's have for the whole batch
    // (a share's mean gradient is larger by total / rows, and would overflow fp16 where one executor
    // does not); the update unscales by the scale itself.
    const double scale = weighted_by_seed ? loss_scale->scale : 0;
    if (weighted_by_seed) loss_scale->scale = scale * static_cast<double>(r.weight);
    auto restore = [&] {
      if (observed) r.executor->observe_nodes({});
      if (weighted_by_seed) loss_scale->scale = scale;
    };
    launch_final(-1);  // buckets no node writes
    try {
      r.executor->resume(step, OpCategory::Backward, seconds);
    } catch (...) {
      restore();
      throw;
    }
    restore();
  } else {
    std::fill(buf.grads.begin(), buf.grads.end(), 0.0f);  // no share: adds nothing to the sums
  }
  if (timed) times_.backward_end = seconds_between(backward_start, Clock::now());
  launch_final(std::numeric_limits<int>::max());
  r.bucket_thread.drain();
  if (timed) {
    // What the buckets' all-reduces took, and how long the step waited for them after its backward pass.
    exposed_seconds_ += seconds_between(backward_start, Clock::now()) - times_.backward_end;
    for (size_t b = 0; b < buckets_.size(); ++b) reduce_seconds_ += times_.ended[b] - times_.started[b];
  }
}

double DataParallelExecutor::resume(uint64_t step, OpCategory last, PhaseSeconds* seconds) {
  if (done_ < 0) throw std::logic_error("data-parallel executor: resume before run");
  const bool backward = done_ < static_cast<int>(OpCategory::Backward) && last >= OpCategory::Backward;
  const bool update = done_ < static_cast<int>(OpCategory::Update) && last >= OpCategory::Update;
  done_ = std::max(done_, static_cast<int>(last));
  if (!backward && !update) return loss_;
  std::vector<PhaseSeconds> phase(replicas_.size(), PhaseSeconds{});
  on_every_replica([&](Replica& r) {
    PhaseSeconds* mine = &phase[static_cast<size_t>(r.index)];
    if (backward) backward_and_reduce(r, step, mine);
    if (update && r.rows > 0) r.executor->resume(step, OpCategory::Update, mine);
  });
  // A replica that had no rows copies a trained one's state (replica 0 always has rows).
  if (update)
    for (auto& r : replicas_)
      if (r->rows == 0) copy_state(*replicas_.front(), *r);
  if (seconds)
    for (size_t p = 0; p < seconds->size(); ++p) (*seconds)[p] += phase[0][p];
  return loss_;
}

void DataParallelExecutor::copy_host_state(StepExecutor& from, StepExecutor& to) {
  to.buffers() = from.buffers();
  to.optimizer_slots() = from.optimizer_slots();
  if (from.loss_scale() && to.loss_scale()) *to.loss_scale() = *from.loss_scale();
}

void DataParallelExecutor::copy_state(const Replica& from, Replica& to) {
  from.executor->sync_to_host();
  copy_host_state(*from.executor, *to.executor);
  to.executor->sync_to_device();
}

bool DataParallelExecutor::all_have_batch(bool mine) {
  if (local_replicas() > 1)
    throw std::logic_error("data-parallel executor: all_have_batch with several local replicas");
  const double have = mine ? 1 : 0;
  const std::vector<double> all = replicas_.front()->comm->all_gather(&have, 1, "whether every rank has a batch");
  for (double a : all)
    if (a == 0) return false;
  return true;
}

FlatBuffers<float>& DataParallelExecutor::buffers() { return replicas_.front()->executor->buffers(); }
OptimizerSlots<float>& DataParallelExecutor::optimizer_slots() {
  return replicas_.front()->executor->optimizer_slots();
}
LossScale* DataParallelExecutor::loss_scale() { return replicas_.front()->executor->loss_scale(); }
Tensor DataParallelExecutor::host_value(int id) {
  const GraphValue& v = replica_graph_.values.at(static_cast<size_t>(id));
  const bool per_example = v.batched && v.role != ValueRole::Param && v.role != ValueRole::State && v.grad_of < 0;
  if (!per_example || local_replicas() == 1) return replicas_.front()->executor->host_value(id);
  // A value with a row per example: the local replicas' rows, in order (this process's whole batch).
  std::vector<Tensor> parts;
  int64_t rows = 0;
  for (auto& r : replicas_)
    if (r->rows > 0) {
      parts.push_back(r->executor->host_value(id));
      rows += r->rows;
    }
  Shape shape = parts.front().shape();
  shape.at(0) = rows;
  Tensor out = Tensor::empty(parts.front().dtype(), shape);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(out.raw() + at, p.raw(), p.byte_size());
    at += p.byte_size();
  }
  return out;
}
const StepArena& DataParallelExecutor::arena() const { return replicas_.front()->executor->arena(); }

void DataParallelExecutor::sync_to_host() {
  // The moving statistics averaged over every replica, into every replica.
  on_every_replica([&](Replica& r) {
    r.executor->sync_to_host();
    std::vector<float>& states = r.executor->buffers().states;
    if (states.empty() || world_ == 1) return;
    r.comm->all_reduce(states.data(), states.size(), "the moving statistics' average");
    const float inv = 1.0f / static_cast<float>(world_);
    for (float& x : states) x *= inv;
    r.executor->sync_to_device();
  });
}

void DataParallelExecutor::sync_to_device() {
  // Replica 0's host state to every replica of this process, then global rank 0's to every process.
  Replica& r0 = *replicas_.front();
  for (size_t k = 1; k < replicas_.size(); ++k) copy_host_state(*r0.executor, *replicas_[k]->executor);
  on_every_replica([&](Replica& r) {
    if (local_replicas() < world_) {
      FlatBuffers<float>& buf = r.executor->buffers();
      OptimizerSlots<float>& slots = r.executor->optimizer_slots();
      broadcast_floats(*r.comm, buf.params, 0, "the weights from rank 0");
      broadcast_floats(*r.comm, buf.states, 0, "the moving statistics from rank 0");
      broadcast_resized(*r.comm, slots.m, "the optimizer's first moments from rank 0");
      broadcast_resized(*r.comm, slots.v, "the optimizer's second moments from rank 0");
      r.comm->broadcast(&slots.iterations, sizeof slots.iterations, 0, "the optimizer's step count from rank 0");
      if (LossScale* ls = r.executor->loss_scale()) r.comm->broadcast(ls, sizeof *ls, 0, "the loss scale from rank 0");
    }
    r.executor->sync_to_device();
  });
}

}  // namespace pipec

// The one interface every executor of a training-step graph implements: the reference executor (plain
// loops, the oracle), the fast CPU executor (oneDNN and JIT kernels) and the GPU executor (cuDNN,
// cuBLASLt and generated CUDA kernels). The training loop, evaluation, checkpoints and the differential
// tests talk to this interface only; no executor derives from another.
//
// Where the state lives: an executor may keep the parameters, gradients, optimizer slots and computed
// values on a device. buffers() and optimizer_slots() are host copies: current after construction and
// after sync_to_host(), and a change made to them (weights loaded with --init, a checkpoint restored)
// reaches the step after sync_to_device(). The small figures the loop reports each step are current
// after each step without a sync: loss_scale(), and optimizer_slots().iterations and .last_lr (the
// schedule's rate is the host's to compute). CPU executors compute in the host buffers, so both calls
// cost nothing there. The training loop (runtime/train/loop/train_loop.h) keeps to this: TrainLoop.*
// (tests/unit/train_loop_sync_test.cpp) runs it on an executor that syncs only when told.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/model/step_arena.h"
#include "runtime/train/math/loss_scale.h"
#include "runtime/train/math/optimizer.h"

namespace pipec {

/// The flat buffers of a step: parameters, their gradients (same layout) and non-trainable state.
template <class T>
struct FlatBuffers {
  std::vector<T> params, grads, states;
};

/// What an executor holds for steps of some batch size beside the flat buffers: the block its computed
/// values live in, and its kernels' own memory by part (name, bytes), as the memory plan before the
/// first step counts them.
struct ExecutorMemory {
  int64_t arena_bytes = 0;
  std::vector<std::pair<std::string, int64_t>> kernels;
};

/// Seconds spent per phase (indexed by OpCategory: forward, loss, backward, update).
using PhaseSeconds = std::array<double, 4>;

class StepExecutor {
 public:
  virtual ~StepExecutor() = default;

  /// What `pipec run`'s summary names the executor by (after the first step: which kernels it got).
  virtual std::string description() const = 0;

  /// Runs the nodes of every phase up to `last` on one batch: `inputs` in g.inputs order (any dtype,
  /// converted to the graph's), `target` for the loss (null when `last` is Forward). `step` keys dropout.
  /// Returns the loss (0 without one). Adds the time of each phase to `seconds` when given.
  virtual double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
                     PhaseSeconds* seconds = nullptr) = 0;
  /// Goes on with the same batch: runs the phases after the ones run so far, up to `last` (the training
  /// loop looks at the loss before the backward pass and the update touch the weights).
  virtual double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr) = 0;

  /// Host copies of the flat buffers and the optimizer's slots (see the file comment).
  virtual FlatBuffers<float>& buffers() = 0;
  virtual OptimizerSlots<float>& optimizer_slots() = 0;
  /// Brings buffers(), optimizer_slots() and loss_scale() up to date with the executor's own copies.
  virtual void sync_to_host() {}
  /// Makes the executor's own copies equal to buffers(), optimizer_slots() and loss_scale().
  virtual void sync_to_device() {}

  /// The dynamic loss scale of a mixed_fp16 step (its nodes say `loss_scale = dynamic`); null otherwise.
  /// Current after each step (a device executor decides the skip on the device and reads the flag back).
  virtual LossScale* loss_scale() = 0;

  /// A value computed by the last run and still held (the output, the loss, values a later phase reads),
  /// copied to the host when it lives on a device.
  virtual Tensor host_value(int id) = 0;

  /// The plan of the block the step's computed values live in (made at the first step).
  virtual const StepArena& arena() const = 0;

  /// Readies the executor for batches of `rows` (an executor may make its kernels now, as the first
  /// step of that size would) and says what it will hold for them; nullopt when it cannot tell, and
  /// the memory plan then counts the graph's own liveness block (step_memory.h) and no kernels.
  virtual std::optional<ExecutorMemory> prepare_memory(int64_t rows) {
    (void)rows;
    return std::nullopt;
  }

  /// The global index of the next batches' first example (0 until set). Dropout keys each example's
  /// mask by its index, so N data-parallel replicas, each given its share of a batch and its share's
  /// first index, draw the masks one replica would draw for the whole batch.
  virtual void set_first_example(int64_t first) = 0;

  /// Called on the executor's thread after each node of a step has run, with the node's index in
  /// g.nodes (a node a fused kernel computed earlier is reported at its own turn, after it is done).
  /// Data-parallel training starts a gradient bucket's all-reduce as soon as the last node writing into
  /// it is reported, while the backward pass goes on. An executor whose nodes complete asynchronously
  /// (on a device stream) keeps the default, returns false, and its buckets start after the backward
  /// pass. An empty observer removes it.
  using NodeObserver = std::function<void(size_t node)>;
  virtual bool observe_nodes(NodeObserver observer) {
    (void)observer;
    return false;
  }
};

}  // namespace pipec

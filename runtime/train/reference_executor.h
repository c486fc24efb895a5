// The reference executor (the -O0 oracle of training): runs a training-step graph node by node with the
// plain loops of ref_kernels.h, expr nodes on the expression interpreter, every value in a tensor of its
// own. T = float trains; T = double (on a graph made f64 by with_float_dtype) checks gradients against
// finite differences. Single-threaded, so its results do not depend on the machine.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/model/step_arena.h"
#include "runtime/train/loss_scale.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/step_executor.h"

namespace pipec {

/// A copy of `g` whose f32 values and expr instructions are `dtype` instead (f64 for gradient checks).
ModelGraph with_float_dtype(const ModelGraph& g, DType dtype);

template <class T>
class ReferenceExecutor {
 public:
  /// `g` must outlive the executor; its float values must be T's dtype. Parameters start as Keras
  /// initializes them (initializers.h) from `seed`, which also keys dropout.
  ReferenceExecutor(const ModelGraph& g, uint64_t seed);
  virtual ~ReferenceExecutor() = default;

  /// What `pipec run`'s summary names the executor by.
  virtual std::string description() const;

  FlatBuffers<T>& buffers() { return buf_; }
  OptimizerSlots<T>& optimizer_slots() { return slots_; }
  /// The dynamic loss scale of a mixed_fp16 step (its nodes say `loss_scale = dynamic`); null otherwise.
  LossScale* loss_scale() { return loss_scale_ ? &*loss_scale_ : nullptr; }
  const LossScale* loss_scale() const { return loss_scale_ ? &*loss_scale_ : nullptr; }

  /// Runs the nodes of every phase up to `last` on one batch: `inputs` in g.inputs order (any dtype,
  /// converted to the graph's), `target` for the loss (null when `last` is Forward). `step` keys dropout.
  /// Returns the loss (0 without one). Adds the time of each phase to `seconds` when given.
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds = nullptr);
  /// Goes on with the same batch: runs the phases after the ones run so far, up to `last` (the training
  /// loop looks at the loss before the backward pass and the update touch the weights).
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr);

  /// A value computed by the last run and still held: the output, the loss, and values that a node of a
  /// phase not run yet will read (each is freed after its last reader; parameters live in buffers()).
  const Tensor& value(int id) const { return values_.at(id); }

  /// The plan of the block the step's computed values live in (made at the first step, and again for a
  /// larger batch).
  const StepArena& arena() const { return arena_; }

 protected:
  /// Faster executors (runtime/train/fast) derive from this one and override run_node for the kinds
  /// they have kernels for, leaving the others (and the order, the buffers, the phases) to it.
  T* data(int id);
  /// Gives each output of `n` that is not a view of the flat buffers its place in the step's arena.
  void allocate_outputs(const GraphNode& n, int64_t rows);
  /// Value `id`'s place in the arena, as a tensor of its full shape for `rows` (a view of the block).
  Tensor arena_tensor(int id, int64_t rows);
  virtual void run_node(const GraphNode& n, int64_t rows, uint64_t step);
  /// How the element-by-element loops over whole buffers (the optimizer's update, mixed precision's
  /// rounding) are split: one loop here (the oracle runs on one thread); the fast executor's threads
  /// there. The results are the same bit for bit either way.
  virtual ParallelFor loop_threads() const { return nullptr; }
  /// The optimizer_step node's compiled update to run instead of the loop: none here (the oracle never
  /// runs generated code); the node's GraphNode::native in the fast executor.
  virtual const NativeKernel* optimizer_kernel(const GraphNode&) const { return nullptr; }

 private:
  void run_phases(int after, OpCategory last, uint64_t step, PhaseSeconds* seconds);

 protected:
  const ModelGraph& g_;
  uint64_t seed_;
  FlatBuffers<T> buf_;
  OptimizerSlots<T> slots_;
  std::optional<LossScale> loss_scale_;
  std::vector<Tensor> values_;
  double loss_ = 0;
  std::vector<int> last_use_;     // per value: the last node that reads it (values are freed after it)
  std::vector<int> first_write_;  // per value: the first node that writes it (its producer, unless a
                                  // derived executor writes it earlier)
  int64_t rows_ = 0;
  int done_ = -1;  // the last phase run on the current batch

 private:
  void prepare_arena(int64_t rows);
  StepArena arena_;
  std::shared_ptr<uint8_t[]> arena_block_;
};

}  // namespace pipec

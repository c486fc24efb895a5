// What every CPU executor of a training-step graph owns (the reference and the fast executor each hold
// one; neither derives from the other): the flat buffers, the optimizer's slots and the loss scale; the
// step's computed values in the block its arena plans; feeding a batch's inputs; and the walk over the
// schedule, phase by phase, that runs each node with the executor's own code and frees each value after
// its last reader. How a node is computed is the executor's: run_reference_node
// (runtime/train/reference/reference_executor.h) for the reference, its kernels for the fast executor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/model/step_arena.h"
#include "runtime/train/math/loss_scale.h"
#include "runtime/train/math/optimizer.h"
#include "runtime/train/step_executor.h"

namespace pipec {

template <class T>
class StepState {
 public:
  /// Runs one node on a batch of `rows` (the executor's computation of it).
  using NodeRunner = std::function<void(const GraphNode& n, int64_t rows, uint64_t step)>;

  /// `g` must outlive the state; its float values must be T's dtype. Parameters start as Keras
  /// initializes them (initializers.h) from `seed`, which also keys dropout. `owner` names the executor
  /// in the errors of a misuse ("reference executor").
  StepState(const ModelGraph& g, uint64_t seed, std::string owner);

  const ModelGraph& graph() const { return g_; }
  uint64_t seed() const { return seed_; }
  /// The global index of the batch's first example, which dropout keys its masks by
  /// (StepExecutor::set_first_example).
  int64_t first_example() const { return first_example_; }
  void set_first_example(int64_t first) { first_example_ = first; }
  /// Called after each node the walk runs (StepExecutor::observe_nodes).
  void set_node_observer(StepExecutor::NodeObserver observer) { observer_ = std::move(observer); }

  FlatBuffers<T>& buffers() { return buf_; }
  OptimizerSlots<T>& optimizer_slots() { return slots_; }
  /// mixed_fp16's dynamic loss scale (its optimizer_step says `loss_scale = dynamic`); null otherwise.
  LossScale* loss_scale() { return loss_scale_ ? &*loss_scale_ : nullptr; }

  /// Feeds a batch (`inputs` in g.inputs order, any dtype, converted to the graph's; `target` for the
  /// loss, or null), zeroes the gradients and runs the nodes of every phase up to `last` with
  /// `run_node`. Returns the loss (0 without one). Adds each phase's time to `seconds` when given.
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds, const NodeRunner& run_node);
  /// Goes on with the same batch: the phases after the ones run so far, up to `last`.
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds, const NodeRunner& run_node);

  /// The step's loss: set by the loss node, read by the optimizer's (mixed_fp16 skips a step whose loss
  /// is not finite).
  double loss() const { return loss_; }
  void set_loss(double loss) { loss_ = loss; }

  /// Value `id`'s elements: a view of the flat buffers for a parameter, a state or a gradient, else its
  /// tensor of this step (a std::logic_error when it is not computed yet).
  T* data(int id);
  /// Value `id`'s tensor of this step: the inputs fed, and the outputs a node gave (empty once freed).
  Tensor& value(int id) { return values_.at(static_cast<size_t>(id)); }
  const Tensor& value(int id) const { return values_.at(static_cast<size_t>(id)); }

  /// Gives each output of `n` that is not a view of the flat buffers (nor an expr node's, which takes
  /// its place itself) its place in the step's arena.
  void allocate_outputs(const GraphNode& n, int64_t rows);
  /// Value `id`'s place in the arena, as a tensor of its full shape for `rows` (a view of the block).
  Tensor arena_tensor(int id, int64_t rows);
  /// The plan of the block the step's computed values live in (made at the first step, and again for a
  /// larger batch).
  const StepArena& arena() const { return arena_; }

  /// Per value: the node that first writes it and the one that last reads it, which the arena is
  /// planned with and values are freed by. An executor that writes a value before its producer's turn,
  /// or reads it after its last reader, moves them before its first step (the fast executor's backward
  /// groups).
  std::vector<int>& first_writes() { return first_write_; }
  std::vector<int>& last_uses() { return last_use_; }
  const std::vector<int>& first_writes() const { return first_write_; }
  const std::vector<int>& last_uses() const { return last_use_; }
  /// Per value: stored as bf16 (the fast executor on bf16 kernels, runtime/model/bf16_storage.h): its
  /// place in the arena is 2 bytes an element and arena_tensor gives it as a bf16 tensor. Set before the
  /// first step.
  void set_bf16_values(std::vector<bool> bf16) { bf16_ = std::move(bf16); }
  const std::vector<bool>& bf16_values() const { return bf16_; }

 private:
  void run_phases(int after, OpCategory last, uint64_t step, PhaseSeconds* seconds, const NodeRunner& run_node);
  void prepare_arena(int64_t rows);

  const ModelGraph& g_;
  uint64_t seed_;
  int64_t first_example_ = 0;
  StepExecutor::NodeObserver observer_;
  std::string owner_;
  FlatBuffers<T> buf_;
  OptimizerSlots<T> slots_;
  std::optional<LossScale> loss_scale_;
  std::vector<Tensor> values_;
  double loss_ = 0;
  std::vector<int> last_use_;     // per value: the last node that reads it (values are freed after it)
  std::vector<int> first_write_;  // per value: the first node that writes it
  std::vector<bool> bf16_;        // per value: stored as bf16 (empty: none)
  int64_t rows_ = 0;
  int done_ = -1;  // the last phase run on the current batch
  // Whether the gradient buffer was zeroed for the current batch: at the first phase that reaches the
  // backward pass, so a forward-only run (evaluation, a served request) never touches it.
  bool grads_zeroed_ = false;
  StepArena arena_;
  std::shared_ptr<uint8_t[]> arena_block_;
};

}  // namespace pipec

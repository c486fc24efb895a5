// The reference executor (the -O0 oracle of training): runs a training-step graph node by node with the
// plain loops of ref_kernels.h, expr nodes on the expression interpreter, each computed value in its
// place in the step's arena. T = float trains (a StepExecutor); T = double (on a graph made f64 by
// with_float_dtype) checks gradients against finite differences. Single-threaded, so its results do not
// depend on the machine.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/model/step_arena.h"
#include "runtime/train/math/loss_scale.h"
#include "runtime/train/math/optimizer.h"
#include "runtime/train/step_executor.h"
#include "runtime/train/step_state.h"

namespace pipec {

/// A copy of `g` whose f32 values and expr instructions are `dtype` instead (f64 for gradient checks).
ModelGraph with_float_dtype(const ModelGraph& g, DType dtype);

/// The reference executor's claim: it computes every kind of model_ops.def (run_reference_node's switch
/// has a case for each, which -Wswitch keeps so), and is the oracle the other executors' claims
/// (fast_kernel_of, gpu::node_kernel_of) are checked against in tests/unit/model_op_coverage_test.cpp.
constexpr bool reference_executor_computes(ModelOp) { return true; }

/// How run_reference_node runs the loops over whole buffers (the optimizer's update, mixed precision's
/// rounding). The reference runs them as one loop (the oracle runs on one thread, and never runs
/// generated code); the fast executor over its threads, with the optimizer_step node's compiled update.
/// The results are the same bit for bit either way.
struct ReferenceLoops {
  ParallelFor threads;           // none: one loop
  bool compiled_update = false;  // run the optimizer_step node's GraphNode::native when it has one (f32)
};

/// Node `n` of `s`'s graph on a batch of `rows`, with the plain loops of ref_kernels.h (expr nodes on
/// the expression interpreter): the reference executor's computation of every kind, which the fast
/// executor runs for the kinds it has no kernel for.
template <class T>
void run_reference_node(StepState<T>& s, const GraphNode& n, int64_t rows, uint64_t step,
                        const ReferenceLoops& loops = {});

namespace detail {
// The interface ReferenceExecutor<T> implements: StepExecutor for float; nothing for double, which the
// gradient checks call directly (StepExecutor's buffers are float).
struct NoInterface {};
template <class T>
using ReferenceInterface = std::conditional_t<std::is_same_v<T, float>, StepExecutor, NoInterface>;
}  // namespace detail

/// The reference executor: a StepState walked with run_reference_node. Its member functions are
/// StepExecutor's for T = float (declared without `override`, which the double instance could not
/// take; reference_executor.cpp asserts the float one implements the whole interface).
template <class T>
class ReferenceExecutor final : public detail::ReferenceInterface<T> {
 public:
  /// `g` must outlive the executor; its float values must be T's dtype. Parameters start as Keras
  /// initializes them (initializers.h) from `seed`, which also keys dropout.
  ReferenceExecutor(const ModelGraph& g, uint64_t seed);

  /// What `pipec run`'s summary names the executor by.
  std::string description() const;

  /// As StepExecutor::run and ::resume.
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds = nullptr);
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr);

  /// The buffers and slots the steps compute in (no other copy: syncing costs nothing).
  FlatBuffers<T>& buffers() { return state_.buffers(); }
  OptimizerSlots<T>& optimizer_slots() { return state_.optimizer_slots(); }
  /// The dynamic loss scale of a mixed_fp16 step (its nodes say `loss_scale = dynamic`); null otherwise.
  LossScale* loss_scale() { return state_.loss_scale(); }

  /// A value computed by the last run and still held: the output, the loss, and values that a node of a
  /// phase not run yet will read (each is freed after its last reader; parameters live in buffers()).
  const Tensor& value(int id) const { return state_.value(id); }
  Tensor host_value(int id) { return state_.value(id); }

  /// The plan of the block the step's computed values live in (made at the first step, and again for a
  /// larger batch).
  const StepArena& arena() const { return state_.arena(); }

  /// As StepExecutor::set_first_example and ::observe_nodes (every node is observed).
  void set_first_example(int64_t first) { state_.set_first_example(first); }
  bool observe_nodes(StepExecutor::NodeObserver observer) {
    state_.set_node_observer(std::move(observer));
    return true;
  }

 private:
  typename StepState<T>::NodeRunner node_runner();

  StepState<T> state_;
};

}  // namespace pipec

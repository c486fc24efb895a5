#include "runtime/train/step_state.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "runtime/ops/kernel.h"
#include "runtime/trace/trace.h"
#include "runtime/train/math/initializers.h"

namespace pipec {

namespace {

// The trace's name of an executor phase (the update is the optimizer's).
trace::StepPhase trace_phase(OpCategory c) {
  switch (c) {
    case OpCategory::Forward: return trace::StepPhase::Forward;
    case OpCategory::Loss: return trace::StepPhase::Loss;
    case OpCategory::Backward: return trace::StepPhase::Backward;
    case OpCategory::Update: return trace::StepPhase::Optimizer;
  }
  return trace::StepPhase::Forward;
}

template <class T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::F32 : DType::F64;
}

}  // namespace

template <class T>
StepState<T>::StepState(const ModelGraph& g, uint64_t seed, std::string owner)
    : g_(g), seed_(seed), owner_(std::move(owner)) {
  initialize_parameters<T>(g, seed, buf_.params, buf_.states);
  buf_.grads.assign(buf_.params.size(), T(0));
  // A value's tensor is freed after the last node that reads it, so a step holds what is live, not
  // every activation and gradient at once. The output and the loss stay for the caller.
  last_use_ = value_last_uses(g);
  first_write_ = value_first_writes(g);
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::OptimizerStep && loss_scaled(n.attrs)) loss_scale_.emplace();
}

template <class T>
T* StepState<T>::data(int id) {
  const GraphValue& v = g_.values[id];
  if (v.role == ValueRole::Param) return buf_.params.data() + v.offset;
  if (v.role == ValueRole::State) return buf_.states.data() + v.offset;
  if (v.grad_of >= 0) return buf_.grads.data() + g_.values[v.grad_of].offset;
  Tensor& t = values_.at(id);
  if (!t.defined()) throw std::logic_error(fmt::format("{}: %{} is read before it is computed", owner_, id));
  return t.data<T>();
}

template <class T>
double StepState<T>::run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
                         PhaseSeconds* seconds, const NodeRunner& run_node) {
  if (inputs.size() != g_.inputs.size())
    throw std::logic_error(fmt::format("{}: {} inputs for {}", owner_, inputs.size(), g_.inputs.size()));
  int64_t rows = !inputs.empty() ? inputs[0].shape().at(0) : target ? target->shape().at(0) : 1;
  values_.assign(g_.values.size(), Tensor());
  done_ = -1;
  auto feed = [&](int id, const Tensor& t, DType dtype) {
    Tensor x = t.dtype() == dtype ? t : cast_tensor(t, dtype);
    Shape want = g_.full_shape(id, rows);
    if (x.shape() != want) {
      if (x.num_elements() != shape_num_elements(want))
        throw std::runtime_error(fmt::format("`{}` is {} per batch, the model needs {}", g_.values[id].name,
                                             shape_to_string(x.shape()), shape_to_string(want)));
      x = x.reshaped(want);
    }
    values_[id] = x;
  };
  for (size_t k = 0; k < inputs.size(); ++k) feed(g_.inputs[k], inputs[k], g_.values[g_.inputs[k]].dtype);
  if (target && g_.target >= 0) feed(g_.target, *target, dtype_of<T>());
  grads_zeroed_ = false;
  loss_ = 0;
  rows_ = rows;
  prepare_arena(rows);
  run_phases(-1, last, step, seconds, run_node);
  return loss_;
}

template <class T>
double StepState<T>::resume(uint64_t step, OpCategory last, PhaseSeconds* seconds, const NodeRunner& run_node) {
  if (done_ < 0) throw std::logic_error(owner_ + ": resume before run");
  run_phases(done_, last, step, seconds, run_node);
  return loss_;
}

template <class T>
void StepState<T>::run_phases(int after, OpCategory last, uint64_t step, PhaseSeconds* seconds,
                              const NodeRunner& run_node) {
  if (!grads_zeroed_ && last >= OpCategory::Backward) {
    std::fill(buf_.grads.begin(), buf_.grads.end(), T(0));
    grads_zeroed_ = true;
  }
  // With a trace, each run of nodes of one phase is a span ("forward", "loss", "backward", "optimizer").
  int span_phase = -1;
  int64_t span_start = 0, span_end = 0;
  auto close_span = [&] {
    if (span_phase >= 0)
      trace::phase_span(trace_phase(static_cast<OpCategory>(span_phase)), span_start, span_end - span_start);
  };
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const GraphNode& n = g_.nodes[i];
    int phase = static_cast<int>(n.phase);
    if (phase <= after || phase > static_cast<int>(last)) continue;
    auto start = std::chrono::steady_clock::now();
    run_node(n, rows_, step);
    if (observer_) observer_(i);
    for (int v : n.inputs)
      if (last_use_[v] == static_cast<int>(i)) values_[v] = Tensor();
    const auto end = std::chrono::steady_clock::now();
    if (seconds) (*seconds)[phase] += std::chrono::duration<double>(end - start).count();
    if (trace::enabled()) {
      const int64_t s_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
      if (phase != span_phase) {
        close_span();
        span_phase = phase;
        span_start = s_ns;
      }
      span_end = std::chrono::duration_cast<std::chrono::nanoseconds>(end.time_since_epoch()).count();
    }
  }
  close_span();
  done_ = std::max(done_, static_cast<int>(last));
}

template <class T>
void StepState<T>::prepare_arena(int64_t rows) {
  if (arena_block_ && rows <= arena_.rows) return;  // a plan for more rows serves fewer
  arena_block_.reset();                             // the old block first: the peak is the new one
  arena_ = plan_step_arena(g_, rows, first_write_, last_use_, bf16_);
  constexpr std::align_val_t kAlign{64};
  auto* block =
      static_cast<uint8_t*>(::operator new[](static_cast<size_t>(std::max<int64_t>(arena_.bytes, 1)), kAlign));
  arena_block_ = std::shared_ptr<uint8_t[]>(block, [](uint8_t* p) { ::operator delete[](p, std::align_val_t{64}); });
}

template <class T>
Tensor StepState<T>::arena_tensor(int id, int64_t rows) {
  const GraphValue& v = g_.values.at(static_cast<size_t>(id));
  const int64_t offset = arena_.offset.at(static_cast<size_t>(id));
  if (offset < 0 || rows > arena_.rows)
    throw std::logic_error(fmt::format("{}: %{} has no place in the step's arena", owner_, id));
  // A view: the block outlives it (the aliasing shared_ptr holds the block).
  const DType stored = !bf16_.empty() && bf16_[static_cast<size_t>(id)] ? DType::BF16 : v.dtype;
  return Tensor::adopt(stored, g_.full_shape(id, rows),
                       std::shared_ptr<uint8_t[]>(arena_block_, arena_block_.get() + offset));
}

template <class T>
void StepState<T>::allocate_outputs(const GraphNode& n, int64_t rows) {
  for (int o : n.outputs) {
    const GraphValue& v = g_.values[o];
    if (v.grad_of < 0 && v.role != ValueRole::Param && v.role != ValueRole::State && n.op != ModelOp::Expr)
      values_[o] = arena_tensor(o, rows);
  }
}

template class StepState<float>;
template class StepState<double>;

}  // namespace pipec

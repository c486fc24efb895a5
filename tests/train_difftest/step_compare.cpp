#include "tests/train_difftest/step_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/dist/thread_communicator.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/math/optimizer.h"
#include "runtime/train/math/round_16bit.h"
#include "runtime/train/parallel/data_parallel_executor.h"
#include "runtime/train/persist/weights_file.h"
#include "runtime/train/reference/reference_executor.h"
#include "runtime/train/step_state.h"
#include "tests/difftest/gen_types.h"
#include "tests/train_difftest/case_data.h"

namespace pipec::train_difftest {

Bounds bounds_for(Precision precision) {
  // docs/design.md, "Differential testing of training", says where each figure comes from.
  //                          delta        K  loss  output grad  floor state  trajectory: loss, weights
  switch (precision) {
    case Precision::MixedBf16: return {1.0 / (1 << 8), 4, 4e-3, 2e-2, 2e-2, 2e-3, 2e-2, 2e-2, 0.1};
    case Precision::MixedFp16: return {1.0 / (1 << 11), 4, 1e-3, 4e-3, 4e-3, 4e-4, 4e-3, 4e-3, 0.1};
    case Precision::Fp32: break;
  }
  return {1.0 / (1 << 20), 4, 1e-5, 2e-5, 1e-4, 1e-5, 2e-5, 1e-3, 0.05};
}

namespace {

FastExecutorOptions fast_options(const CaseSettings& s) {
  FastExecutorOptions o;
  o.threads = s.threads;
  o.direct_conv = s.direct_conv;
  o.cpu_bf16 = s.emulated_bf16 ? CpuBf16::Emulated : CpuBf16::Auto;
  return o;
}

// Everything a step reads besides the batch.
struct State {
  std::vector<float> params, states;
  OptimizerSlots<float> slots;
  std::optional<LossScale> loss_scale;
};

// Through the executor interface's host copies, as a checkpoint is saved and restored (a device
// executor copies them from and to its own).
State state_of(StepExecutor& ex) {
  ex.sync_to_host();
  State s;
  s.params = ex.buffers().params;
  s.states = ex.buffers().states;
  s.slots = ex.optimizer_slots();
  if (const LossScale* ls = ex.loss_scale()) s.loss_scale = *ls;
  return s;
}

void set_state(StepExecutor& ex, const State& s) {
  ex.buffers().params = s.params;
  ex.buffers().states = s.states;
  ex.optimizer_slots() = s.slots;
  if (LossScale* ls = ex.loss_scale()) *ls = *s.loss_scale;
  ex.sync_to_device();
}

struct Batch {
  std::vector<Tensor> inputs;
  Tensor target;
};

Batch batch_of(const ModelGraph& g, const std::map<std::string, Tensor>& data, int64_t step, int64_t rows) {
  auto field = [&](const std::string& name) -> const Tensor& {
    auto it = data.find(name);
    if (it == data.end()) throw std::runtime_error("the case has no data for field `" + name + "`");
    return it->second;
  };
  Batch b;
  for (const std::string& f : g.input_fields) b.inputs.push_back(rows_of(field(f), step * rows, rows));
  b.target = rows_of(field(g.target_field), step * rows, rows);
  return b;
}

// The noise twins: the reference executor with every node's f32 outputs moved a little after the node
// runs, so that how far each checked value moves shows how far rounding alone can move it.
//
// The random twin moves each value by x += delta * u * max(|x|, rms of the tensor), u uniform in
// [-1, 1]: the fast executor's situation, whose kernels round each node's result differently (in another
// order, in f32 sums, by Winograd's transforms) from the same inputs; the rms term stands for the
// rounding of a sum that cancels, which is relative to its terms, not to its result.
//
// It leaves exact zeros (a relu's, a dropped unit's: every executor gives those exactly), batch
// statistics and dropout masks, and mixed precision's round nodes as they are, so that 16-bit values stay 16-bit: what
// the moved inputs flip there is the noise. An expr node with a round node fused into it has its result
// moved and then rounded again.
//
// The tie twin moves only the input of a max pool, and there only values that occur more than once:
// the k-th copy of a value goes k - 1 ulp up, so that of values tied exactly (rows that a strided
// conv2d_transpose left constant) the last wins where the reference's loops take the first. A max's
// gradient jumps at a tie: the fast executor's rounding decides it there, and the tie twin shows what
// the other decision gives.
class NoiseTwin final : public StepExecutor {
 public:
  enum class Kind { Random, Ties };
  NoiseTwin(const ModelGraph& g, uint64_t seed, double delta, Kind kind)
      : state_(g, seed, "noise twin"), delta_(delta), kind_(kind), rng_(seed * 0x94D049BB133111EBull + 3) {}

  std::string description() const override { return "the reference executor, each node's outputs moved"; }
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds = nullptr) override {
    return state_.run(inputs, target, step, last, seconds, runner());
  }
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr) override {
    return state_.resume(step, last, seconds, runner());
  }
  FlatBuffers<float>& buffers() override { return state_.buffers(); }
  OptimizerSlots<float>& optimizer_slots() override { return state_.optimizer_slots(); }
  LossScale* loss_scale() override { return state_.loss_scale(); }
  Tensor host_value(int id) override { return state_.value(id); }
  const StepArena& arena() const override { return state_.arena(); }
  void set_first_example(int64_t first) override { state_.set_first_example(first); }

 private:
  StepState<float>::NodeRunner runner() {
    return [this](const GraphNode& n, int64_t rows, uint64_t step) { run_node(n, rows, step); };
  }
  float* data(int id) { return state_.data(id); }

  void run_node(const GraphNode& n, int64_t rows, uint64_t step) {
    const ModelGraph& g = state_.graph();
    if (kind_ == Kind::Ties) {
      // Ties matter where a max picks one of them: the input of a max pool, before its forward pass
      // (the backward pass, which finds the maximum again, reads the same tensor).
      if (n.op == ModelOp::MaxPool2d || n.op == ModelOp::GlobalMaxPool)
        break_ties(data(n.inputs[0]), shape_num_elements(g.full_shape(n.inputs[0], rows)));
      run_reference_node(state_, n, rows, step);
      return;
    }
    run_reference_node(state_, n, rows, step);
    if (n.op == ModelOp::Round) return;
    // A normalization's batch statistics and dropout's mask are the node's own bookkeeping, not a
    // rounded result (a variance moved below zero would be no variance at all): only their first output.
    const bool first_only = n.op == ModelOp::BatchNorm || n.op == ModelOp::LayerNorm || n.op == ModelOp::Dropout;
    for (size_t k = 0; k < (first_only ? 1 : n.outputs.size()); ++k) {
      const int id = n.outputs[k];
      const GraphValue& v = g.values[static_cast<size_t>(id)];
      if (v.dtype != DType::F32 || v.role == ValueRole::Param || v.role == ValueRole::State) continue;
      const int64_t count = v.grad_of >= 0 ? g.values[static_cast<size_t>(v.grad_of)].elements_per_example()
                                           : shape_num_elements(g.full_shape(id, rows));
      // gelu's kernels evaluate 1 + erf(x / sqrt(2)) in f32 (oneDNN's as TensorFlow's), which cancels
      // for x below 0: their error is an ulp of x (of dy backward), not of the result.
      const float* scale = n.op == ModelOp::Gelu           ? data(n.inputs[0])
                           : n.op == ModelOp::GeluBackward ? data(n.inputs[1])
                                                           : nullptr;
      if (n.op == ModelOp::SoftmaxBackward) scale = in_f32(softmax_terms(n, rows));
      if (is_normalization_backward(n)) scale = in_f32(normalization_terms(n, rows)[k]);
      if ((n.op == ModelOp::BatchNorm || n.op == ModelOp::LayerNorm) && k == 0)
        scale = in_f32(normalization_forward_terms(n, rows));
      move_randomly(data(id), count, scale);
      if (is_normalization_backward(n) && k == 0) move_by_shared_sums(n, rows);
      // An expr node that rounds its result (a round node fused into it) writes 16-bit values: moved,
      // they are rounded again, as the round node after it would have rounded them.
      if (const std::optional<DType> narrow = rounded_result(n, k)) {
        if (*narrow == DType::BF16) round_to_bf16(data(id), data(id), count);
        else round_to_f16(data(id), data(id), count);
      }
    }
  }

  // The 16-bit type an expr node's result k is rounded to at the end of its function
  // (compiler/train/passes/fuse_round_into_expr.cpp), if it is.
  static std::optional<DType> rounded_result(const GraphNode& n, size_t k) {
    if (n.op != ModelOp::Expr || !n.fn || k >= n.fn->results.size()) return std::nullopt;
    const Instr& up = n.fn->body.at(static_cast<size_t>(n.fn->results[k].second));
    if (up.op != OpKind::Cast || up.operands.size() != 1) return std::nullopt;
    const DType narrow = n.fn->body.at(static_cast<size_t>(up.operands[0])).type.dtype;
    if (narrow != DType::BF16 && narrow != DType::F16) return std::nullopt;
    return narrow;
  }

  // softmax's backward pass is y * (dy - sum(y * dy)) over the axis, which cancels exactly where dy is
  // the same along it (mae's gradient, the same sign everywhere): an f32 kernel's result there is
  // rounding of terms y * dy, which may then be all the gradient there is. Each element's
  // |y| * (|dy| + sum |y * dy|).
  std::vector<float>& softmax_terms(const GraphNode& n, int64_t rows) {
    const ModelGraph& g = state_.graph();
    const Shape full = g.full_shape(n.inputs[0], rows);
    const size_t axis = static_cast<size_t>(n.attrs_as<SoftmaxAttrs>().axis) + 1;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < full.size(); ++d) (d < axis ? outer : inner) *= d == axis ? 1 : full[d];
    const int64_t len = full[axis];
    const float *y = data(n.inputs[0]), *dy = data(n.inputs[1]);
    terms_.assign(1, std::vector<float>(static_cast<size_t>(outer * len * inner)));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return (o * len + j) * inner + i; };
        double sum = 0;
        for (int64_t j = 0; j < len; ++j) sum += std::fabs(static_cast<double>(y[at(j)]) * dy[at(j)]);
        for (int64_t j = 0; j < len; ++j)
          terms_[0][static_cast<size_t>(at(j))] =
              static_cast<float>(std::fabs(static_cast<double>(y[at(j)])) * (std::fabs(dy[at(j)]) + sum));
      }
    return terms_[0];
  }

  // A normalization's dx subtracts two sums per group (a row, or a channel over the batch) from every
  // element of the group: an f32 kernel's rounding of those sums moves every element of the group alike,
  // and so adds up, not out, in anything that sums dx over the group (the bias gradient of the layer
  // before). dx += delta * (u1 * inv / N * sum |dy gamma| + u2 * xhat * inv / N * sum |dy gamma xhat|),
  // u1 and u2 drawn once per group.
  void move_by_shared_sums(const GraphNode& n, int64_t rows_in_batch) {
    const ModelGraph& g = state_.graph();
    const bool per_row = n.op == ModelOp::LayerNormBackward;
    const double eps = per_row ? n.attrs_as<LayerNormAttrs>().epsilon : n.attrs_as<BatchNormAttrs>().epsilon;
    const Shape shape = g.full_shape(n.inputs[0], rows_in_batch);
    const int64_t channels = shape.back(), rows = shape_num_elements(shape) / channels;
    const float *x = data(n.inputs[0]), *dy = data(n.inputs[1]), *gamma = data(n.inputs[2]), *mean = data(n.inputs[3]),
                *variance = data(n.inputs[4]);
    float* dx = data(n.outputs[0]);
    const int64_t groups = per_row ? rows : channels, group_size = per_row ? channels : rows;
    auto group = [&](int64_t r, int64_t c) { return static_cast<size_t>(per_row ? r : c); };
    auto inv = [&](size_t s) { return 1 / std::sqrt(static_cast<double>(variance[s]) + eps); };
    std::vector<double> sum_gx(static_cast<size_t>(groups)), sum_gx_xhat(static_cast<size_t>(groups));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < channels; ++c) {
        const size_t s = group(r, c);
        const double gx = std::fabs(static_cast<double>(dy[r * channels + c]) * gamma[c]);
        sum_gx[s] += gx;
        // The magnitude of xhat's terms (normalization_terms says why).
        sum_gx_xhat[s] += gx * (std::fabs(x[r * channels + c]) + std::fabs(static_cast<double>(mean[s]))) * inv(s);
      }
    std::vector<double> u1(static_cast<size_t>(groups)), u2(static_cast<size_t>(groups));
    for (int64_t s = 0; s < groups; ++s)
      u1[static_cast<size_t>(s)] = rng_.real(-1, 1), u2[static_cast<size_t>(s)] = rng_.real(-1, 1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < channels; ++c) {
        const size_t s = group(r, c);
        const double xhat = (x[r * channels + c] - static_cast<double>(mean[s])) * inv(s);
        const double scale = inv(s) / static_cast<double>(group_size);
        float& d = dx[r * channels + c];
        if (d == 0) continue;  // an exact zero (gamma 0, dy 0) stays one
        d = static_cast<float>(d + delta_ * f32_share() * scale * (u1[s] * sum_gx[s] + u2[s] * xhat * sum_gx_xhat[s]));
      }
  }

  // A normalization's y = gamma * (x - mean) * inv + beta, rounded relative to its terms: |gamma| * (|x| +
  // |mean|) * inv + |beta| (normalization_terms says why x - mean counts so).
  std::vector<float>& normalization_forward_terms(const GraphNode& n, int64_t rows_in_batch) {
    const ModelGraph& g = state_.graph();
    const bool per_row = n.op == ModelOp::LayerNorm;
    const double eps = per_row ? n.attrs_as<LayerNormAttrs>().epsilon : n.attrs_as<BatchNormAttrs>().epsilon;
    const Shape shape = g.full_shape(n.inputs[0], rows_in_batch);
    const int64_t channels = shape.back(), rows = shape_num_elements(shape) / channels;
    const float *x = data(n.inputs[0]), *gamma = data(n.inputs[1]), *beta = data(n.inputs[2]);
    // The statistics the node used: its own outputs while training, the moving ones in evaluation.
    const bool moving = !per_row && n.attrs_as<BatchNormAttrs>().inference;
    const float* mean = moving ? data(n.inputs[3]) : data(n.outputs[1]);
    const float* variance = moving ? data(n.inputs[4]) : data(n.outputs[2]);
    terms_.assign(1, std::vector<float>(static_cast<size_t>(rows * channels)));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < channels; ++c) {
        const size_t s = static_cast<size_t>(per_row ? r : c);
        const double inv = 1 / std::sqrt(static_cast<double>(variance[s]) + eps);
        terms_[0][static_cast<size_t>(r * channels + c)] =
            static_cast<float>(std::fabs(static_cast<double>(gamma[c])) *
                                   (std::fabs(x[r * channels + c]) + std::fabs(static_cast<double>(mean[s]))) * inv +
                               std::fabs(static_cast<double>(beta[c])));
      }
    return terms_[0];
  }

  // The share of delta that the rounding of terms inside a kernel is: kernels compute in f32 under every
  // precision (mixed precision rounds only the values between nodes to 16 bits), so a cancelling sum's
  // terms are rounded at f32's level (the fp32 twin's delta, 2^-20), however coarse delta is.
  double f32_share() const { return std::min(1.0, (1.0 / (1 << 20)) / delta_); }
  const float* in_f32(std::vector<float>& terms) const {
    const double share = f32_share();
    for (float& t : terms) t = static_cast<float>(t * share);
    return terms.data();
  }

  static bool is_normalization_backward(const GraphNode& n) {
    return n.op == ModelOp::BatchNormBackward || n.op == ModelOp::LayerNormBackward;
  }

  // A normalization's backward pass subtracts the means of dy * gamma and of dy * gamma * xhat from
  // dy * gamma, and its dgamma and dbeta sum over the statistics' other axis: results that cancel (a
  // layer_norm's dx sums to zero over a row), which an f32 kernel rounds relative to the terms, not to
  // the result. For each output, each element's sum of its terms' magnitudes.
  std::vector<std::vector<float>>& normalization_terms(const GraphNode& n, int64_t rows_in_batch) {
    const ModelGraph& g = state_.graph();
    const bool per_row = n.op == ModelOp::LayerNormBackward;  // else per channel
    const double eps = per_row ? n.attrs_as<LayerNormAttrs>().epsilon : n.attrs_as<BatchNormAttrs>().epsilon;
    const Shape shape = g.full_shape(n.inputs[0], rows_in_batch);
    const int64_t channels = shape.back(), rows = shape_num_elements(shape) / channels;
    const float *x = data(n.inputs[0]), *dy = data(n.inputs[1]), *gamma = data(n.inputs[2]), *mean = data(n.inputs[3]),
                *variance = data(n.inputs[4]);
    const int64_t groups = per_row ? rows : channels, group_size = per_row ? channels : rows;
    std::vector<double> sum_gx(static_cast<size_t>(groups)), sum_gx_xhat(static_cast<size_t>(groups));
    terms_.assign(3, {});
    terms_[0].resize(static_cast<size_t>(rows * channels));
    terms_[1].assign(static_cast<size_t>(channels), 0.0f);
    terms_[2].assign(static_cast<size_t>(channels), 0.0f);
    auto at = [&](int64_t r, int64_t c) { return static_cast<size_t>(per_row ? r : c); };
    // xhat = (x - mean) * inv is rounded relative to x and the mean, not to their difference: where a
    // channel's values sit close together far from zero (a saturated tanh before a batch_norm), xhat's
    // rounding is |mean| * inv ulps, far above xhat's own.
    auto xhat_terms = [&](int64_t r, int64_t c) {
      const size_t s = at(r, c);
      return (std::fabs(x[r * channels + c]) + std::fabs(static_cast<double>(mean[s]))) /
             std::sqrt(static_cast<double>(variance[s]) + eps);
    };
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < channels; ++c) {
        const double d = dy[r * channels + c], gx = std::fabs(d * gamma[c]), xh = xhat_terms(r, c);
        sum_gx[at(r, c)] += gx;
        sum_gx_xhat[at(r, c)] += gx * xh;
        terms_[1][static_cast<size_t>(c)] += static_cast<float>(std::fabs(d) * xh);
        terms_[2][static_cast<size_t>(c)] += static_cast<float>(std::fabs(d));
      }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < channels; ++c) {
        const size_t s = at(r, c);
        const double inv = 1 / std::sqrt(static_cast<double>(variance[s]) + eps);
        const double gx = std::fabs(static_cast<double>(dy[r * channels + c]) * gamma[c]);
        terms_[0][static_cast<size_t>(r * channels + c)] =
            static_cast<float>(inv / static_cast<double>(group_size) *
                               (static_cast<double>(group_size) * gx + sum_gx[s] + xhat_terms(r, c) * sum_gx_xhat[s]));
      }
    return terms_;
  }

  // Each element by delta * u * the largest of its magnitude, the tensor's rms and |scale[i]|.
  void move_randomly(float* x, int64_t count, const float* scale) {
    double sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += static_cast<double>(x[i]) * x[i];
    const double typical = count ? std::sqrt(sum / static_cast<double>(count)) : 0;
    if (!std::isfinite(typical)) return;
    for (int64_t i = 0; i < count; ++i) {
      if (x[i] == 0) continue;
      double size = std::max(std::fabs(static_cast<double>(x[i])), typical);
      if (scale) size = std::max(size, std::fabs(static_cast<double>(scale[i])));
      x[i] = static_cast<float>(x[i] + delta_ * rng_.real(-1, 1) * size);
    }
  }

  static void break_ties(float* x, int64_t count) {
    std::unordered_map<float, int> seen;
    for (int64_t i = 0; i < count; ++i) {
      if (x[i] == 0 || !std::isfinite(x[i])) continue;
      const int copies = seen[x[i]]++;
      for (int k = 0; k < copies; ++k) x[i] = std::nextafter(x[i], INFINITY);
    }
  }

  StepState<float> state_;
  double delta_;
  Kind kind_;
  difftest::Rng rng_;
  std::vector<std::vector<float>> terms_;  // softmax_terms' or normalization_terms' result
};

// The results of one step on one executor.
struct StepResults {
  double loss = 0;
  std::vector<float> output, grads, states_after;
  State after;  // everything after the update
};

// One step from the executor's current state: the loss (before the backward pass, as the training
// loop reads it), the output, the gradients after the backward pass, the state after the update.
StepResults take_step(StepExecutor& ex, const ModelGraph& g, const Batch& b, uint64_t step,
                      const Perturbation* p = nullptr) {
  using Kind = Perturbation::Kind;
  StepResults r;
  r.loss = ex.run(b.inputs, &b.target, step, OpCategory::Loss);
  if (p && p->kind == Kind::Loss) r.loss *= 1 + p->amount;
  const Tensor y = ex.host_value(g.output);
  r.output.assign(y.data<float>(), y.data<float>() + y.num_elements());
  ex.resume(step, OpCategory::Backward);
  ex.sync_to_host();
  if (p && p->kind == Kind::Gradient && step == 0) {
    const GraphValue& v = g.values[static_cast<size_t>(g.params.at(0))];
    float* d = ex.buffers().grads.data() + v.offset;
    for (int64_t i = 0; i < v.elements_per_example(); ++i) d[i] *= static_cast<float>(1 + p->amount);
    ex.sync_to_device();
  }
  r.grads = ex.buffers().grads;
  ex.resume(step, OpCategory::Update);
  r.after = state_of(ex);
  if (p && p->kind == Kind::Update && step == 0) {
    float& w = r.after.params.at(0);
    w = std::nextafter(w, w < 0 ? -INFINITY : INFINITY);
  }
  r.states_after = r.after.states;
  return r;
}

// One step on the reference executor in f64 (the graph made f64 by with_float_dtype) from `before`: the
// exact values the f32 executors round, up to f64's own rounding.
struct ExactStep {
  double loss = 0;
  std::vector<double> output, grads, states_after;
  std::vector<double> params_after;
};

void set_state(ReferenceExecutor<double>& ex, const State& s) {
  auto wide = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  ex.buffers().params = wide(s.params);
  ex.buffers().states = wide(s.states);
  OptimizerSlots<double>& o = ex.optimizer_slots();
  o.m = wide(s.slots.m);
  o.v = wide(s.slots.v);
  o.iterations = s.slots.iterations;
  o.last_lr = s.slots.last_lr;
  o.last_grad_norm = s.slots.last_grad_norm;
  if (LossScale* ls = ex.loss_scale()) *ls = *s.loss_scale;
}

ExactStep take_exact_step(ReferenceExecutor<double>& ex, const ModelGraph& g, const Batch& b, uint64_t step) {
  ExactStep r;
  r.loss = ex.run(b.inputs, &b.target, step, OpCategory::Loss);
  const Tensor& y = ex.value(g.output);
  r.output.assign(y.data<double>(), y.data<double>() + y.num_elements());
  ex.resume(step, OpCategory::Backward);
  r.grads = ex.buffers().grads;
  ex.resume(step, OpCategory::Update);
  r.states_after = ex.buffers().states;
  r.params_after = ex.buffers().params;
  return r;
}

// Whether a step's loss or (unscaled) gradients passed 2^64.
bool blown_up(const StepResults& r, double loss_scale) {
  constexpr double kLimit = 18446744073709551616.0;  // 2^64
  if (std::isfinite(r.loss) && std::fabs(r.loss) > kLimit) return true;
  for (float gr : r.grads)
    if (std::isfinite(gr) && std::fabs(static_cast<double>(gr)) / loss_scale > kLimit) return true;
  return false;
}

template <class T>
bool all_finite(const std::vector<T>& v) {
  for (T x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

double max_abs(const float* p, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(p[i])));
  return m;
}

// The largest |a - b| over n elements; 0 when either is not finite somewhere (no measure of noise).
template <class A, class B>
double max_distance(const A* a, const B* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (!std::isfinite(d)) return 0;
    m = std::max(m, d);
  }
  return m;
}

// The place of flat index `i` in `shape`, as "[1, 0, 2]".
std::string index_text(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

// What a failed check was about, for the f64 triage.
struct Subject {
  enum class Kind { None, Loss, Output, Gradient, State } kind = Kind::None;
  int value = -1;      // the parameter or state value
  int64_t index = -1;  // the element
};

// A bound: its fixed part plus K times the noise twin's distance.
struct Bound {
  double fixed = 0, noise = 0, factor = 0;
  double total() const { return fixed + factor * noise; }
  std::string text(const std::string& fixed_text) const {
    return fmt::format("{:.3g} ({} + {:g} x {:.3g}, the witnesses' largest distance)", total(), fixed_text, factor,
                       noise);
  }
};

class Checker {
 public:
  explicit Checker(CaseOutcome& out) : out_(out) {}

  /// What the next checks are about (kept from the first failure on).
  void about(Subject::Kind kind, int value = -1) {
    if (out_.ok) subject_ = {kind, value, -1};
  }
  const Subject& subject() const { return subject_; }

  /// Notes measured / bound for `check`; on the first failure, `what()` describes it.
  template <class F>
  void note(const std::string& check, double measured, double bound, F what) {
    const double ratio = bound > 0 ? measured / bound : (measured > 0 ? INFINITY : 0);
    double& worst = out_.worst[check];
    if (!(ratio <= worst)) worst = std::isnan(ratio) ? INFINITY : ratio;
    if (!(measured <= bound) && out_.ok) {
      out_.ok = false;
      out_.failure = what();
    }
  }

  /// Every element of `got` within `bound` of `want`.
  void tensors(const std::string& check, const std::string& label, const float* got, const float* want, int64_t n,
               const Shape& shape, const Bound& bound, const std::string& fixed_text) {
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      // Where the reference is not finite, it overflowed there (the case ends at this step): the fast
      // executor's value near the same overflow, or past it, is as good.
      if (!std::isfinite(want[i])) continue;
      const double d = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
      if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d, at = i;
    }
    if (out_.ok) subject_.index = at;
    note(check, worst, bound.total(), [&] {
      return fmt::format("{}: |fast - reference| is {:.3g} at {} (fast {:.9g}, reference {:.9g}); the bound is {}",
                         label, worst, index_text(at, shape), got[at], want[at], bound.text(fixed_text));
    });
  }

  bool ok() const { return out_.ok; }

 private:
  CaseOutcome& out_;
  Subject subject_;
};

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// The first element where two vectors differ in their bits, as text.
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return fmt::format("{} elements, the reference has {}", got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return fmt::format("element {}: {:.9g}, expected {:.9g}", i, got[i], want[i]);
  return "no difference";
}

// The parameter a flat index belongs to.
std::string param_at(const ModelGraph& g, size_t i) {
  for (int p : g.params) {
    const GraphValue& v = g.values[static_cast<size_t>(p)];
    if (static_cast<int64_t>(i) >= v.offset && static_cast<int64_t>(i) < v.offset + v.elements_per_example())
      return fmt::format("`{}` {}", v.name, index_text(static_cast<int64_t>(i) - v.offset, v.shape));
  }
  return "?";
}

double rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return v.empty() ? 0 : std::sqrt(s / static_cast<double>(v.size()));
}

// The failed check's quantity in f64 (the exact step of the reference pass), and each f32 executor's
// distance from it: whether the fast executor is wrong, or the quantity is ill-conditioned (both far).
std::string triage_in_f64(const ModelGraph& g, const Subject& subject, const ExactStep& exact, const StepResults& ref,
                          const StepResults& fast) {
  auto line = [](const std::string& what, double value, double ref_value, double fast_value) {
    return fmt::format("in f64 {} is {:.9g}: the reference is {:.3g} from it, the fast executor {:.3g}", what, value,
                       std::fabs(ref_value - value), std::fabs(fast_value - value));
  };
  const size_t index = static_cast<size_t>(std::max<int64_t>(subject.index, 0));
  switch (subject.kind) {
    case Subject::Kind::Loss: return line("the loss", exact.loss, ref.loss, fast.loss);
    case Subject::Kind::Output:
      return line(fmt::format("the output's element {}", index), exact.output.at(index), ref.output.at(index),
                  fast.output.at(index));
    case Subject::Kind::Gradient: {
      const GraphValue& v = g.values[static_cast<size_t>(subject.value)];
      const size_t i = static_cast<size_t>(v.offset) + index;
      return line(fmt::format("the gradient of `{}` {}", v.name, index_text(subject.index, v.shape)), exact.grads.at(i),
                  ref.grads.at(i), fast.grads.at(i));
    }
    case Subject::Kind::State: {
      const GraphValue& v = g.values[static_cast<size_t>(subject.value)];
      const size_t i = static_cast<size_t>(v.offset) + index;
      return line(fmt::format("`{}` {} after the step", v.name, index_text(subject.index, v.shape)),
                  exact.states_after.at(i), ref.states_after.at(i), fast.states_after.at(i));
    }
    case Subject::Kind::None: break;
  }
  return "";
}

}  // namespace

// 3. The inference graph (TrainProgram::inference: what a served model runs, and what evaluation runs
// with its loss added): the fast executor's forward pass against the reference's on the first batch,
// with the reference's weights and moving statistics after its steps (copied by name, as a served
// model loads a --save file), bounded as a step's output is: the fixed part plus K times the farthest
// witness (the noise twins, the f64 reference).
void compare_inference(const TrainProgram& t, const std::map<std::string, Tensor>& data, const State& trained,
                       const CaseSettings& s, const Bounds& b, const Perturbation& perturb, Checker& check) {
  const ModelGraph& g = t.inference;
  const ModelGraph& step = t.step;
  auto copy_by_name = [](const ModelGraph& from, const std::vector<int>& from_ids, const std::vector<float>& values,
                         const ModelGraph& to, const std::vector<int>& to_ids, std::vector<float>& out) {
    for (int id : to_ids) {
      const GraphValue& v = to.values[static_cast<size_t>(id)];
      const auto it = std::find_if(from_ids.begin(), from_ids.end(),
                                   [&](int f) { return from.values[static_cast<size_t>(f)].name == v.name; });
      if (it == from_ids.end()) throw std::logic_error("the inference graph's `" + v.name + "` is not in the step's");
      const GraphValue& w = from.values[static_cast<size_t>(*it)];
      if (w.shape != v.shape) throw std::logic_error("`" + v.name + "` has another shape in the inference graph");
      std::copy_n(values.begin() + w.offset, v.elements_per_example(), out.begin() + v.offset);
    }
  };
  State st;
  ReferenceExecutor<float> ref(g, s.seed);
  st.params = ref.buffers().params;
  st.states = ref.buffers().states;
  st.slots = ref.optimizer_slots();
  if (const LossScale* ls = ref.loss_scale()) st.loss_scale = *ls;
  copy_by_name(step, step.params, trained.params, g, g.params, st.params);
  copy_by_name(step, step.states, trained.states, g, g.states, st.states);
  Batch batch;
  for (const std::string& f : g.input_fields) {
    auto it = data.find(f);
    if (it == data.end()) throw std::runtime_error("the case has no data for field `" + f + "`");
    batch.inputs.push_back(rows_of(it->second, 0, s.batch));
  }
  auto forward = [&](StepExecutor& ex) {
    set_state(ex, st);
    ex.run(batch.inputs, nullptr, 0, OpCategory::Forward);
    const Tensor y = ex.host_value(g.output);
    return std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements());
  };
  FastExecutor fast(g, s.seed, fast_options(s));
  const std::vector<float> want = forward(ref);
  std::vector<float> got = forward(fast);
  if (perturb.kind == Perturbation::Kind::Inference)
    for (float& v : got) v *= static_cast<float>(1 + perturb.amount);
  NoiseTwin random_twin(g, s.seed, b.noise_delta, NoiseTwin::Kind::Random),
      tie_twin(g, s.seed, b.noise_delta, NoiseTwin::Kind::Ties);
  const int64_t n = static_cast<int64_t>(want.size());
  double witness = std::max(max_distance(forward(random_twin).data(), want.data(), n),
                            max_distance(forward(tie_twin).data(), want.data(), n));
  const ModelGraph g64 = with_float_dtype(g, DType::F64);
  ReferenceExecutor<double> exact(g64, s.seed);
  set_state(exact, st);
  exact.run(batch.inputs, nullptr, 0, OpCategory::Forward);
  const Tensor& y64 = exact.value(g64.output);
  witness = std::max(witness, max_distance(y64.data<double>(), want.data(), n));
  check.about(Subject::Kind::Output, g.output);
  const double scale = std::max(max_abs(want.data(), n), max_abs(got.data(), n));
  const Bound ob{b.output_rtol * scale, witness, b.noise_factor};
  check.tensors("inference output", "inference, the model's output", got.data(), want.data(), n,
                g.full_shape(g.output, s.batch), ob,
                fmt::format("{:g} of its largest magnitude {:.3g}", b.output_rtol, scale));
}

CaseOutcome compare_training(const TrainProgram& t, const std::map<std::string, Tensor>& data,
                             const std::string& init_path, const CaseSettings& s, const Bounds& b,
                             const Perturbation& perturb_fast) {
  const ModelGraph& g = t.step;
  CaseOutcome out;
  Checker check(out);
  ReferenceExecutor<float> ref(g, s.seed);
  NoiseTwin random_twin(g, s.seed, b.noise_delta, NoiseTwin::Kind::Random),
      tie_twin(g, s.seed, b.noise_delta, NoiseTwin::Kind::Ties);
  // Under data parallelism with 16-bit values a third witness: the reference executor as the same
  // replicas, each with its share of the batch. Its distance from the reference is what the split alone
  // changes there: a share's gradient rounded to 16 bits before the shares are added, which cancels
  // where the shares do. Not in fp32, where the split changes only f32 rounding: a fault of the
  // data-parallel executor itself, which this witness shares, would widen its own bound, and the fp32
  // cases keep it in sight.
  std::unique_ptr<StepExecutor> replica_twin;
  if (s.replicas > 1 && t.precision != Precision::Fp32)
    replica_twin = std::make_unique<DataParallelExecutor>(
        g, s.seed, shared_communicators(make_thread_communicators(s.replicas)),
        [](const ModelGraph& rg, uint64_t seed) -> std::unique_ptr<StepExecutor> {
          return std::make_unique<ReferenceExecutor<float>>(rg, seed);
        });
  std::vector<StepExecutor*> twins = {&random_twin, &tie_twin};
  std::vector<std::string> witness_names = {"the random twin", "the tie twin"};
  if (replica_twin) {
    twins.push_back(replica_twin.get());
    witness_names.push_back("the data-parallel reference");
  }
  witness_names.push_back("the f64 run");
  const ModelGraph g64 = with_float_dtype(g, DType::F64);
  ReferenceExecutor<double> exact(g64, s.seed);
  // The executor under test: the fast executor, or with `replicas` > 1 that many fast executors as
  // data-parallel replicas on threads, each with its share of every batch.
  std::unique_ptr<StepExecutor> fast_executor;
  if (s.replicas > 1)
    fast_executor = std::make_unique<DataParallelExecutor>(
        g, s.seed, shared_communicators(make_thread_communicators(s.replicas)),
        [&s](const ModelGraph& rg, uint64_t seed) -> std::unique_ptr<StepExecutor> {
          return std::make_unique<FastExecutor>(rg, seed, fast_options(s));
        });
  else fast_executor = std::make_unique<FastExecutor>(g, s.seed, fast_options(s));
  StepExecutor& fast = *fast_executor;
  load_weights(g, init_path, ref.buffers());
  load_weights(g, init_path, fast.buffers());
  const State initial = state_of(ref);
  const GraphNode* optimizer = nullptr;
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::OptimizerStep) optimizer = &n;
  if (!optimizer) throw std::logic_error("the step graph has no optimizer_step node");
  const OptimizerConfig config = OptimizerConfig::from_node(*optimizer);
  const bool scaled = optimizer->attrs_as<OptimizerAttrs>().loss_scale.has_value();

  // The reference's steps, each with its state before, and the noise twin's step from that state.
  struct RefStep {
    State before;
    StepResults ref;
    std::vector<StepResults> noise;  // of each twin
    ExactStep exact;
  };
  std::vector<RefStep> steps;
  for (int64_t k = 0; k < s.steps; ++k) {
    const Batch batch = batch_of(g, data, k, s.batch);
    RefStep st;
    st.before = state_of(ref);
    st.ref = take_step(ref, g, batch, static_cast<uint64_t>(k));
    // `pipec run` stops at a loss that is not finite, except under mixed_fp16, which skips the step.
    if (!std::isfinite(st.ref.loss) && !scaled) {
      out.stopped_nonfinite = true;
      break;
    }
    // Data-parallel replicas each sum a share of the batch (in 16 bits under mixed precision) and add
    // the shares in f32: a gradient that overflows fp16 summed over the whole batch may not over a
    // share, so a step the reference skips with a finite loss is not one the replicas must skip too;
    // the case ends there.
    if (s.replicas > 1 && scaled && std::isfinite(st.ref.loss) && st.ref.after.loss_scale &&
        st.ref.after.loss_scale->last_skipped) {
      out.stopped_nonfinite = true;
      break;
    }
    // Past 2^64 (about the square root of f32's largest value) a square in an f32 kernel (a variance, a
    // gradient norm for global_clipnorm, Adam's second moment) overflows where the reference's f64
    // sums do not: the two no longer compute the same function in f32's range, and the case ends, as at
    // a loss that is not finite.
    if (blown_up(st.ref, st.before.loss_scale ? st.before.loss_scale->scale : 1.0)) {
      out.stopped_nonfinite = true;
      break;
    }
    for (StepExecutor* twin : twins) {
      set_state(*twin, st.before);
      st.noise.push_back(take_step(*twin, g, batch, static_cast<uint64_t>(k)));
    }
    set_state(exact, st.before);
    st.exact = take_exact_step(exact, g64, batch, static_cast<uint64_t>(k));
    // A weight or a moving statistic that overflowed f32 on the reference: this step is compared where
    // it is finite, and the case ends there, as at a loss that is not finite (what comes after compares
    // one overflow with another).
    const bool overflowed = !all_finite(st.ref.after.params) || !all_finite(st.ref.states_after);
    steps.push_back(std::move(st));
    if (overflowed) {
      out.stopped_nonfinite = true;
      break;
    }
  }
  const State ref_final = state_of(ref);
  const double K = b.noise_factor;

  // 1. Step by step, each from the reference's state before it.
  size_t failed_step = steps.size();
  StepResults fast_results;
  for (size_t k = 0; k < steps.size() && check.ok(); ++k) {
    failed_step = k;
    const RefStep& st = steps[k];
    const StepResults& want = st.ref;
    const std::string at = fmt::format("step {}", k + 1);
    const Batch batch = batch_of(g, data, static_cast<int64_t>(k), s.batch);
    set_state(fast, st.before);
    fast_results = take_step(fast, g, batch, k, &perturb_fast);
    const StepResults& got = fast_results;
    ++out.steps_compared;
    // The loss and the output.
    check.about(Subject::Kind::Loss);
    if (std::isfinite(want.loss) != std::isfinite(got.loss)) {
      check.note("loss", INFINITY, 0, [&] {
        return fmt::format("{}: the loss is {} on the fast executor, {} on the reference", at, got.loss, want.loss);
      });
      break;
    }
    // The largest distance of a witness's value from the reference's: the twins' and the exact step's
    // (a value that is not finite there, an fp16 gradient that overflowed, measures nothing).
    auto noise = [&](auto distance) {
      double d = 0;
      for (const StepResults& n : st.noise) d = std::max(d, distance(n));
      return std::max(d, distance(st.exact));
    };
    if (std::isfinite(want.loss)) {
      const Bound bound{
          b.loss_rtol * std::fabs(want.loss),
          noise([&](const auto& n) { return std::isfinite(n.loss) ? std::fabs(n.loss - want.loss) : 0.0; }), K};
      check.note("loss", std::fabs(got.loss - want.loss), bound.total(), [&] {
        return fmt::format("{}: the loss is {:.9g} on the fast executor, {:.9g} on the reference; the bound is {}", at,
                           got.loss, want.loss, bound.text(fmt::format("{:g} of it", b.loss_rtol)));
      });
      check.about(Subject::Kind::Output, g.output);
      const int64_t n = static_cast<int64_t>(want.output.size());
      const double scale = std::max(max_abs(want.output.data(), n), max_abs(got.output.data(), n));
      const Bound ob{b.output_rtol * scale,
                     noise([&](const auto& r) { return max_distance(r.output.data(), want.output.data(), n); }), K};
      check.tensors("output", at + ", the model's output", got.output.data(), want.output.data(), n,
                    g.full_shape(g.output, s.batch), ob,
                    fmt::format("{:g} of its largest magnitude {:.3g}", b.output_rtol, scale));
    }
    // The gradients: not compared on a mixed_fp16 step whose gradients overflow (both skip it).
    if (std::isfinite(want.loss) && all_finite(want.grads)) {
      double largest = 0;
      for (int p : g.params) {
        const GraphValue& v = g.values[static_cast<size_t>(p)];
        largest = std::max(largest, max_abs(want.grads.data() + v.offset, v.elements_per_example()));
      }
      for (int p : g.params) {
        const GraphValue& v = g.values[static_cast<size_t>(p)];
        const int64_t n = v.elements_per_example();
        const float* w = want.grads.data() + v.offset;
        const double own = std::max(max_abs(w, n), max_abs(got.grads.data() + v.offset, n));
        const Bound gb{b.grad_rtol * own + b.grad_floor * largest,
                       noise([&](const auto& r) { return max_distance(r.grads.data() + v.offset, w, n); }), K};
        check.about(Subject::Kind::Gradient, p);
        check.tensors("gradient", fmt::format("{}, the gradient of `{}`", at, v.name), got.grads.data() + v.offset, w,
                      n, v.shape, gb,
                      fmt::format("{:g} of its largest magnitude {:.3g} + {:g} of the step's largest gradient element "
                                  "{:.3g}",
                                  b.grad_rtol, own, b.grad_floor, largest));
      }
    }
    // Moving statistics, from the batch statistics of the forward pass.
    for (int sv : g.states) {
      const GraphValue& v = g.values[static_cast<size_t>(sv)];
      const int64_t n = v.elements_per_example();
      const float* w = want.states_after.data() + v.offset;
      const double scale = std::max(max_abs(w, n), max_abs(got.states_after.data() + v.offset, n));
      const Bound sb{b.state_rtol * scale,
                     noise([&](const auto& r) { return max_distance(r.states_after.data() + v.offset, w, n); }), K};
      check.about(Subject::Kind::State, sv);
      check.tensors("state", fmt::format("{}, `{}` after the step", at, v.name), got.states_after.data() + v.offset, w,
                    n, v.shape, sb, fmt::format("{:g} of its largest magnitude {:.3g}", b.state_rtol, scale));
    }
    if (!check.ok()) break;
    // The update: what the reference's optimizer loop makes of the fast executor's own gradients.
    check.about(Subject::Kind::None);
    State expect = st.before;
    std::vector<float> g_expect = got.grads;
    bool stepped = true;
    if (scaled && expect.loss_scale) stepped = expect.loss_scale->unscale_or_skip(got.loss, g_expect);
    if (stepped) optimizer_step<float>(config, expect.params, g_expect, expect.slots);
    const State& after = got.after;
    auto update_failed = [&](const char* what, const std::string& detail) {
      check.note("update", 1, 0, [&] {
        return fmt::format(
            "{}: the update is not the optimizer's update from the fast executor's own gradients: {} ({})", at, what,
            detail);
      });
    };
    if (!bit_equal(after.params, expect.params)) {
      size_t i = 0;
      while (i < after.params.size() && std::memcmp(&after.params[i], &expect.params[i], sizeof(float)) == 0) ++i;
      update_failed("the weights differ",
                    fmt::format("{}: {:.9g}, expected {:.9g}", param_at(g, i), after.params[i], expect.params[i]));
    }
    if (!bit_equal(after.slots.m, expect.slots.m))
      update_failed("the first slot differs", first_difference(after.slots.m, expect.slots.m));
    if (!bit_equal(after.slots.v, expect.slots.v))
      update_failed("the second slot differs", first_difference(after.slots.v, expect.slots.v));
    if (after.slots.iterations != expect.slots.iterations)
      update_failed("the step count differs",
                    fmt::format("{}, expected {}", after.slots.iterations, expect.slots.iterations));
    if (after.loss_scale) {
      const LossScale &ls = *after.loss_scale, &e = *expect.loss_scale;
      if (ls.scale != e.scale || ls.good_steps != e.good_steps || ls.skipped != e.skipped)
        update_failed("the loss scale differs", fmt::format("scale {} after {} good steps, expected {} after {}",
                                                            ls.scale, ls.good_steps, e.scale, e.good_steps));
      // Both skip the same steps.
      const bool ref_skipped = want.after.loss_scale->last_skipped;
      if (ls.last_skipped != ref_skipped)
        check.note("loss", INFINITY, 0, [&] {
          return fmt::format("{}: the fast executor {} the step, the reference {}", at,
                             ls.last_skipped ? "skipped" : "took", ref_skipped ? "skipped it" : "took it");
        });
    }
  }
  out.fast_description = fast.description();
  if (!check.ok()) {
    if (failed_step < steps.size() && check.subject().kind != Subject::Kind::None)
      out.triage = triage_in_f64(g, check.subject(), steps[failed_step].exact, steps[failed_step].ref, fast_results);
    return out;
  }
  compare_inference(t, data, ref_final, s, b, perturb_fast, check);
  if (!check.ok()) return out;

  // 2. The trajectory: the fast executor trains every step from the initial weights on its own, and so
  // do the noise twins.
  set_state(fast, initial);
  for (StepExecutor* twin : twins) set_state(*twin, initial);
  set_state(exact, initial);
  std::vector<double> fast_loss;
  const size_t exact_index = twins.size();
  std::vector<std::vector<double>> twin_loss(exact_index + 1);  // the twins', then the exact run's
  auto loss_error = [](double got, double want) {
    if (!std::isfinite(want)) return 0.0;
    return std::isfinite(got) ? (got - want) / std::max(std::fabs(want), 1e-30) : INFINITY;
  };
  // A witness whose run stops being finite where the reference's does not (a 16-bit rounding that
  // lands a row of probabilities on a sum of exactly zero) shows that rounding alone can end this
  // trajectory: no distance from it bounds the fast executor's, so the trajectory goes unchecked, and
  // the case says so (the step-by-step checks above still hold every step).
  std::string lost;
  auto watch = [&](size_t t, double loss, size_t k) {
    if (lost.empty() && !std::isfinite(loss) && std::isfinite(steps[k].ref.loss))
      lost = fmt::format("{}'s loss stopped being finite at step {}, where the reference's is {:.6g}", witness_names[t],
                         k + 1, steps[k].ref.loss);
  };
  for (size_t k = 0; k < steps.size(); ++k) {
    const Batch batch = batch_of(g, data, static_cast<int64_t>(k), s.batch);
    fast_loss.push_back(loss_error(take_step(fast, g, batch, k).loss, steps[k].ref.loss));
    for (size_t t = 0; t < twins.size(); ++t) {
      const double loss = take_step(*twins[t], g, batch, k).loss;
      watch(t, loss, k);
      twin_loss[t].push_back(loss_error(loss, steps[k].ref.loss));
    }
    const double loss = take_exact_step(exact, g64, batch, k).loss;
    watch(exact_index, loss, k);
    twin_loss[exact_index].push_back(loss_error(loss, steps[k].ref.loss));
  }
  auto all_finite = [](const auto& w) {
    return std::all_of(w.begin(), w.end(), [](auto x) { return std::isfinite(x); });
  };
  const bool ref_final_finite = all_finite(ref_final.params);
  if (lost.empty() && ref_final_finite) {
    for (size_t t = 0; t < twins.size() && lost.empty(); ++t)
      if (!all_finite(twins[t]->buffers().params))
        lost = fmt::format("{}'s weights stopped being finite, where the reference's are finite", witness_names[t]);
    if (lost.empty() && !all_finite(exact.buffers().params))
      lost = fmt::format("{}'s weights stopped being finite, where the reference's are finite",
                         witness_names[exact_index]);
  }
  if (!lost.empty()) {
    out.trajectory_unbounded = lost;
    return out;
  }
  double twin_loss_rms = 0;
  for (const std::vector<double>& l : twin_loss) twin_loss_rms = std::max(twin_loss_rms, rms(l));
  const Bound lb{b.trajectory_loss, twin_loss_rms, K};
  check.note("trajectory loss", rms(fast_loss), lb.total(), [&] {
    return fmt::format(
        "over {} steps from the initial weights, the RMS of the losses' relative differences is {:.3g}; "
        "the bound is {}",
        steps.size(), rms(fast_loss), lb.text(fmt::format("{:g}", b.trajectory_loss)));
  });
  // The final weights, relative to how far the reference moved them.
  auto apart = [&](const auto& w) {
    std::vector<double> d(w.size());
    for (size_t i = 0; i < w.size(); ++i) d[i] = static_cast<double>(w[i]) - ref_final.params[i];
    return rms(d);
  };
  std::vector<double> moved(initial.params.size());
  for (size_t i = 0; i < moved.size(); ++i) moved[i] = static_cast<double>(ref_final.params[i]) - initial.params[i];
  const double moved_rms = rms(moved);
  // Weights that overflowed on the reference (the case ended there) have nothing to be compared with.
  if (moved_rms > 0 && std::isfinite(moved_rms)) {
    const double ratio = apart(fast.buffers().params) / moved_rms;
    double twin_ratio = apart(exact.buffers().params) / moved_rms;
    for (StepExecutor* twin : twins) twin_ratio = std::max(twin_ratio, apart(twin->buffers().params) / moved_rms);
    const Bound wb{b.trajectory_weights, twin_ratio, K};
    check.note("trajectory weights", ratio, wb.total(), [&] {
      return fmt::format(
          "after {} steps from the initial weights, RMS(fast - reference) is {:.3g} of RMS(reference - initial) = "
          "{:.3g}; the bound is {}",
          steps.size(), ratio, moved_rms, wb.text(fmt::format("{:g}", b.trajectory_weights)));
    });
  }
  return out;
}

}  // namespace pipec::train_difftest

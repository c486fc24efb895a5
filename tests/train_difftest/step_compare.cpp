#include "tests/train_difftest/step_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/reference_executor.h"
#include "runtime/train/weights_file.h"
#include "tests/train_difftest/case_data.h"

namespace pipec::train_difftest {

Bounds bounds_for(const std::string& precision) {
  // docs/design.md, "Differential testing of training", says where each figure comes from.
  if (precision == "mixed_bf16") return Bounds{2e-2, 5e-2, 5e-2, 5e-3, 5e-2, 5e-2, 0.5};
  if (precision == "mixed_fp16") return Bounds{4e-3, 1e-2, 1e-2, 1e-3, 1e-2, 1e-2, 0.5};
  return Bounds{2e-5, 5e-5, 2e-4, 2e-5, 5e-5, 2e-3, 0.2};
}

namespace {

// Everything a step reads besides the batch.
struct State {
  std::vector<float> params, states;
  OptimizerSlots<float> slots;
  std::optional<LossScale> loss_scale;
};

State state_of(ReferenceExecutor<float>& ex) {
  State s;
  s.params = ex.buffers().params;
  s.states = ex.buffers().states;
  s.slots = ex.optimizer_slots();
  if (const LossScale* ls = ex.loss_scale()) s.loss_scale = *ls;
  return s;
}

// Through the executor interface's host copies: what a checkpoint restore does.
void set_state(ReferenceExecutor<float>& ex, const State& s) {
  ex.buffers().params = s.params;
  ex.buffers().states = s.states;
  ex.optimizer_slots() = s.slots;
  if (LossScale* ls = ex.loss_scale()) *ls = *s.loss_scale;
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

double max_abs(const float* p, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(p[i])));
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

class Checker {
 public:
  Checker(CaseOutcome& out) : out_(out) {}

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
               const Shape& shape, double bound, const std::string& bound_text) {
    double worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < n; ++i) {
      const double d = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
      if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d, at = i;
    }
    note(check, worst, bound, [&] {
      return fmt::format("{}: |fast - reference| is {:.3g} at {} (fast {:.9g}, reference {:.9g}); the bound is {}",
                         label, worst, index_text(at, shape), got[at], want[at], bound_text);
    });
  }

  bool ok() const { return out_.ok; }

 private:
  CaseOutcome& out_;
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

}  // namespace

CaseOutcome compare_training(const TrainProgram& t, const std::map<std::string, Tensor>& data,
                             const std::string& init_path, const CaseSettings& s, const Bounds& b,
                             const Perturbation& perturb) {
  using Kind = Perturbation::Kind;
  const ModelGraph& g = t.step;
  CaseOutcome out;
  Checker check(out);
  ReferenceExecutor<float> ref(g, s.seed);
  FastExecutor fast(g, s.seed, FastExecutorOptions{s.threads, s.direct_conv});
  load_weights(g, init_path, ref.buffers());
  load_weights(g, init_path, fast.buffers());
  const State initial = state_of(ref);
  const GraphNode* optimizer = nullptr;
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::OptimizerStep) optimizer = &n;
  if (!optimizer) throw std::logic_error("the step graph has no optimizer_step node");
  const OptimizerConfig config = OptimizerConfig::from_node(*optimizer);
  const bool scaled = optimizer->attr("loss_scale") != nullptr;

  // The reference's run: the state before each step, its loss, output and gradients.
  struct RefStep {
    State before;
    double loss = 0;
    std::vector<float> output, grads;
  };
  std::vector<RefStep> steps;
  State ref_final;
  for (int64_t k = 0; k < s.steps; ++k) {
    Batch batch = batch_of(g, data, k, s.batch);
    RefStep st;
    st.before = state_of(ref);
    st.loss = ref.run(batch.inputs, &batch.target, static_cast<uint64_t>(k), OpCategory::Loss);
    // `pipec run` stops at a loss that is not finite, except under mixed_fp16, which skips the step.
    if (!std::isfinite(st.loss) && !scaled) {
      out.stopped_nonfinite = true;
      break;
    }
    const Tensor& y = ref.value(g.output);
    st.output.assign(y.data<float>(), y.data<float>() + y.num_elements());
    ref.resume(static_cast<uint64_t>(k), OpCategory::Backward);
    st.grads = ref.buffers().grads;
    ref.resume(static_cast<uint64_t>(k), OpCategory::Update);
    steps.push_back(std::move(st));
  }
  ref_final = state_of(ref);

  // 1. Step by step, each from the reference's state before it.
  for (size_t k = 0; k < steps.size() && check.ok(); ++k) {
    const RefStep& want = steps[k];
    const State& after = k + 1 < steps.size() ? steps[k + 1].before : ref_final;
    const std::string at = fmt::format("step {}", k + 1);
    Batch batch = batch_of(g, data, static_cast<int64_t>(k), s.batch);
    set_state(fast, want.before);
    double loss = fast.run(batch.inputs, &batch.target, k, OpCategory::Loss);
    if (perturb.kind == Kind::Loss) loss *= 1 + perturb.amount;
    ++out.steps_compared;
    if (std::isfinite(want.loss) != std::isfinite(loss)) {
      check.note("loss", INFINITY, 0, [&] {
        return fmt::format("{}: the loss is {} on the fast executor, {} on the reference", at, loss, want.loss);
      });
      break;
    }
    if (std::isfinite(want.loss)) {
      const double bound = b.loss_rtol * std::fabs(want.loss);
      check.note("loss", std::fabs(loss - want.loss), bound, [&] {
        return fmt::format(
            "{}: the loss is {:.9g} on the fast executor, {:.9g} on the reference; the bound is {:.3g} "
            "({:g} of it)",
            at, loss, want.loss, bound, b.loss_rtol);
      });
      const Tensor& y = fast.value(g.output);
      const double scale = std::max(max_abs(want.output.data(), static_cast<int64_t>(want.output.size())),
                                    max_abs(y.data<float>(), y.num_elements()));
      check.tensors(
          "output", at + ", the model's output", y.data<float>(), want.output.data(), y.num_elements(), y.shape(),
          b.output_rtol * scale,
          fmt::format("{:.3g} ({:g} of its largest magnitude, {:.3g})", b.output_rtol * scale, b.output_rtol, scale));
    }
    fast.resume(k, OpCategory::Backward);
    if (perturb.kind == Kind::Gradient && k == 0) {
      const GraphValue& v = g.values[static_cast<size_t>(g.params.at(0))];
      float* p = fast.buffers().grads.data() + v.offset;
      for (int64_t i = 0; i < v.elements_per_example(); ++i) p[i] *= static_cast<float>(1 + perturb.amount);
    }
    const std::vector<float> grads = fast.buffers().grads;
    // A mixed_fp16 step whose gradients overflow is skipped by both: only that decision is compared.
    bool finite_grads = true;
    for (float x : want.grads) finite_grads = finite_grads && std::isfinite(x);
    if (finite_grads && std::isfinite(want.loss)) {
      double largest = 0;
      for (int p : g.params) {
        const GraphValue& v = g.values[static_cast<size_t>(p)];
        largest = std::max(largest, max_abs(want.grads.data() + v.offset, v.elements_per_example()));
      }
      for (int p : g.params) {
        const GraphValue& v = g.values[static_cast<size_t>(p)];
        const int64_t n = v.elements_per_example();
        const double own = std::max(max_abs(want.grads.data() + v.offset, n), max_abs(grads.data() + v.offset, n));
        const double bound = b.grad_rtol * own + b.grad_floor * largest;
        check.tensors("gradient", fmt::format("{}, the gradient of `{}`", at, v.name), grads.data() + v.offset,
                      want.grads.data() + v.offset, n, v.shape, bound,
                      fmt::format("{:.3g} ({:g} of its largest magnitude {:.3g} + {:g} of the step's largest gradient "
                                  "element {:.3g})",
                                  bound, b.grad_rtol, own, b.grad_floor, largest));
      }
    }
    fast.resume(k, OpCategory::Update);
    if (perturb.kind == Kind::Update && k == 0) {
      float& w = fast.buffers().params.at(0);
      w = std::nextafter(w, w < 0 ? -INFINITY : INFINITY);
    }
    if (!check.ok()) break;
    // The update: what the reference's optimizer loop makes of the fast executor's gradients.
    State expect = want.before;
    std::vector<float> g_expect = grads;
    bool stepped = true;
    if (scaled && expect.loss_scale) stepped = expect.loss_scale->unscale_or_skip(loss, g_expect);
    if (stepped) optimizer_step<float>(config, expect.params, g_expect, expect.slots);
    const FlatBuffers<float>& fb = fast.buffers();
    const OptimizerSlots<float>& fs = fast.optimizer_slots();
    auto update_check = [&](const char* what, bool same, const std::string& detail) {
      check.note("update", same ? 0 : 1, 0, [&] {
        return fmt::format(
            "{}: the update is not the optimizer's update from the fast executor's own gradients: {} "
            "({})",
            at, what, detail);
      });
    };
    if (!bit_equal(fb.params, expect.params)) {
      size_t i = 0;
      while (i < fb.params.size() && std::memcmp(&fb.params[i], &expect.params[i], sizeof(float)) == 0) ++i;
      update_check("the weights differ", false,
                   fmt::format("{}: {:.9g}, expected {:.9g}", param_at(g, i), fb.params[i], expect.params[i]));
    }
    if (!bit_equal(fs.m, expect.slots.m))
      update_check("the first slot differs", false, first_difference(fs.m, expect.slots.m));
    if (!bit_equal(fs.v, expect.slots.v))
      update_check("the second slot differs", false, first_difference(fs.v, expect.slots.v));
    if (fs.iterations != expect.slots.iterations)
      update_check("the step count differs", false,
                   fmt::format("{}, expected {}", fs.iterations, expect.slots.iterations));
    if (const LossScale* ls = fast.loss_scale()) {
      const LossScale& e = *expect.loss_scale;
      if (ls->scale != e.scale || ls->good_steps != e.good_steps || ls->skipped != e.skipped)
        update_check("the loss scale differs", false,
                     fmt::format("scale {} after {} good steps, expected {} after {}", ls->scale, ls->good_steps,
                                 e.scale, e.good_steps));
      // Both skip the same steps.
      if (ls->last_skipped != after.loss_scale->last_skipped)
        check.note("loss", INFINITY, 0, [&] {
          return fmt::format("{}: the fast executor {} the step, the reference {}", at,
                             ls->last_skipped ? "skipped" : "took",
                             after.loss_scale->last_skipped ? "skipped it" : "took it");
        });
    }
    // Moving statistics, from the batch statistics of the forward pass.
    for (int st : g.states) {
      const GraphValue& v = g.values[static_cast<size_t>(st)];
      const int64_t n = v.elements_per_example();
      const double scale =
          std::max(max_abs(after.states.data() + v.offset, n), max_abs(fb.states.data() + v.offset, n));
      check.tensors("state", fmt::format("{}, `{}` after the step", at, v.name), fb.states.data() + v.offset,
                    after.states.data() + v.offset, n, v.shape, b.state_rtol * scale,
                    fmt::format("{:.3g} ({:g} of its largest magnitude)", b.state_rtol * scale, b.state_rtol));
    }
  }
  out.fast_description = fast.description();
  if (!check.ok()) return out;

  // 2. The trajectory: the fast executor trains every step from the initial weights on its own.
  set_state(fast, initial);
  std::vector<double> loss_errors;
  for (size_t k = 0; k < steps.size(); ++k) {
    Batch batch = batch_of(g, data, static_cast<int64_t>(k), s.batch);
    const double loss = fast.run(batch.inputs, &batch.target, k, OpCategory::Loss);
    if (std::isfinite(steps[k].loss) && std::isfinite(loss))
      loss_errors.push_back((loss - steps[k].loss) / std::max(std::fabs(steps[k].loss), 1e-30));
    else if (std::isfinite(steps[k].loss) != std::isfinite(loss)) loss_errors.push_back(INFINITY);
    fast.resume(k, OpCategory::Update);
  }
  const double loss_rms = rms(loss_errors);
  check.note("trajectory loss", loss_rms, b.trajectory_loss, [&] {
    return fmt::format(
        "over {} steps from the initial weights, the RMS of the losses' relative differences is {:.3g}; "
        "the bound is {:g}",
        steps.size(), loss_rms, b.trajectory_loss);
  });
  std::vector<double> apart, moved;
  const std::vector<float>& w = fast.buffers().params;
  for (size_t i = 0; i < w.size(); ++i) {
    apart.push_back(static_cast<double>(w[i]) - ref_final.params[i]);
    moved.push_back(static_cast<double>(ref_final.params[i]) - initial.params[i]);
  }
  const double moved_rms = rms(moved);
  if (moved_rms > 0) {
    const double ratio = rms(apart) / moved_rms;
    check.note("trajectory weights", ratio, b.trajectory_weights, [&] {
      return fmt::format(
          "after {} steps from the initial weights, RMS(fast - reference) is {:.3g} of RMS(reference - "
          "initial) = {:.3g}; the bound is {:g}",
          steps.size(), ratio, moved_rms, b.trajectory_weights);
    });
  }
  return out;
}

}  // namespace pipec::train_difftest

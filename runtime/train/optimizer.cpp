#include "runtime/train/optimizer.h"

#include <cmath>
#include <stdexcept>

namespace pipec {

OptimizerConfig OptimizerConfig::from_node(const GraphNode& n) {
  OptimizerConfig c;
  const std::string kind = n.attr_symbol("kind");
  std::optional<OptimizerKind> k = optimizer_kind_from_name(kind);
  if (!k) throw std::logic_error("optimizer_step of an unknown optimizer " + kind);
  c.kind = *k;
  auto get = [&](const char* name, double& out) {
    if (const Value* v = n.attr(name)) out = v->as_double();
  };
  get("lr", c.lr);
  get("beta1", c.beta1);
  get("beta2", c.beta2);
  get("eps", c.eps);
  get("weight_decay", c.weight_decay);
  get("momentum", c.momentum);
  get("global_clipnorm", c.global_clipnorm);
  LrSchedule& s = c.schedule;
  s.initial = c.lr;
  if (n.attr("schedule")) {
    s.kind = n.attr_symbol("schedule");
    get("schedule_initial", s.initial);
    get("schedule_decay_steps", s.decay_steps);
    get("schedule_alpha", s.alpha);
    get("schedule_warmup_steps", s.warmup_steps);
    get("schedule_decay_rate", s.decay_rate);
    if (n.attr("schedule_warmup_target")) {
      s.has_warmup_target = true;
      get("schedule_warmup_target", s.warmup_target);
    }
  }
  return c;
}

namespace {

// sgd: plain steps, or Keras' momentum form with the velocity in `m`.
template <class T>
void sgd_step(const OptimizerConfig& c, double lr_now, size_t n, T* w, const T* g, T* m) {
  const T lr = static_cast<T>(lr_now);
  if (c.momentum == 0) {
    for (size_t i = 0; i < n; ++i) w[i] -= g[i] * lr;
    return;
  }
  const T mu = static_cast<T>(c.momentum);
  for (size_t i = 0; i < n; ++i) {
    m[i] = m[i] * mu - g[i] * lr;
    w[i] += m[i];
  }
}

// adam and adamw (adamw is adam with its own default weight decay, applied before the step).
template <class T>
void adam_step(const OptimizerConfig& c, double lr_now, size_t n, int64_t iterations, T* w, const T* g, T* m, T* v) {
  const double t = static_cast<double>(iterations);
  const T alpha = static_cast<T>(lr_now * std::sqrt(1 - std::pow(c.beta2, t)) / (1 - std::pow(c.beta1, t)));
  const T one_minus_b1 = static_cast<T>(1 - c.beta1), one_minus_b2 = static_cast<T>(1 - c.beta2),
          eps = static_cast<T>(c.eps);
  for (size_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * one_minus_b1;
    v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] -= m[i] * alpha / (std::sqrt(v[i]) + eps);
  }
}

// Global-norm clipping (tf.clip_by_global_norm): the gradients scaled into `clipped` when their norm is
// above clipnorm, so that the gradient buffer stays what the backward pass computed. Returns the
// gradients to step with and sets `norm` to their norm before clipping.
template <class T>
const T* clip_by_global_norm(double clipnorm, size_t n, const T* g, std::vector<T>& clipped, double& norm) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  norm = std::sqrt(sum);
  if (norm <= clipnorm) return g;
  const T scale = static_cast<T>(clipnorm / norm);
  clipped.resize(n);
  for (size_t i = 0; i < n; ++i) clipped[i] = g[i] * scale;
  return clipped.data();
}

}  // namespace

template <class T>
void optimizer_step(const OptimizerConfig& c, std::vector<T>& params, const std::vector<T>& grads,
                    OptimizerSlots<T>& slots) {
  const size_t n = params.size();
  const bool has_second_moment = c.kind != OptimizerKind::Sgd;
  if (slots.m.size() != n) slots.m.assign(n, T(0));
  if (has_second_moment && slots.v.size() != n) slots.v.assign(n, T(0));
  // The rate is the schedule's at the step count before the step (OptimizerConfig::lr is only the
  // number the schedule starts from).
  const double lr_now = c.schedule.at(slots.iterations);
  slots.last_lr = lr_now;
  T* w = params.data();
  const T* g = grads.data();
  std::vector<T> clipped;
  slots.last_grad_norm = 0;
  if (c.global_clipnorm > 0) g = clip_by_global_norm(c.global_clipnorm, n, g, clipped, slots.last_grad_norm);
  if (c.weight_decay > 0) {
    const T decay = static_cast<T>(lr_now * c.weight_decay);
    for (size_t i = 0; i < n; ++i) w[i] -= w[i] * decay;
  }
  ++slots.iterations;
  switch (c.kind) {
    case OptimizerKind::Sgd: sgd_step(c, lr_now, n, w, g, slots.m.data()); return;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: adam_step(c, lr_now, n, slots.iterations, w, g, slots.m.data(), slots.v.data()); return;
  }
}

template void optimizer_step<float>(const OptimizerConfig&, std::vector<float>&, const std::vector<float>&,
                                    OptimizerSlots<float>&);
template void optimizer_step<double>(const OptimizerConfig&, std::vector<double>&, const std::vector<double>&,
                                     OptimizerSlots<double>&);

}  // namespace pipec

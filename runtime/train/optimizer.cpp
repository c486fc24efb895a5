#include "runtime/train/optimizer.h"

#include <cmath>
#include <stdexcept>

namespace pipec {

OptimizerConfig OptimizerConfig::from_node(const GraphNode& n) {
  OptimizerConfig c;
  c.kind = n.attr_symbol("kind");
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

template <class T>
void optimizer_step(const OptimizerConfig& c, std::vector<T>& params, const std::vector<T>& grads, OptimizerSlots<T>& slots) {
  const size_t n = params.size();
  if (slots.m.size() != n) slots.m.assign(n, T(0));
  if (c.kind != "sgd" && slots.v.size() != n) slots.v.assign(n, T(0));
  const double lr_now = c.schedule.at(slots.iterations);
  slots.last_lr = lr_now;
  const T lr = static_cast<T>(lr_now);
  T* w = params.data();
  const T* g = grads.data();
  T* m = slots.m.data();
  // Global-norm clipping scales a copy: the gradient buffer stays what the backward pass computed.
  std::vector<T> clipped;
  slots.last_grad_norm = 0;
  if (c.global_clipnorm > 0) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += static_cast<double>(g[i]) * static_cast<double>(g[i]);
    const double norm = std::sqrt(sum);
    slots.last_grad_norm = norm;
    if (norm > c.global_clipnorm) {
      const T scale = static_cast<T>(c.global_clipnorm / norm);
      clipped.resize(n);
      for (size_t i = 0; i < n; ++i) clipped[i] = g[i] * scale;
      g = clipped.data();
    }
  }
  if (c.weight_decay > 0) {
    const T decay = static_cast<T>(lr_now * c.weight_decay);
    for (size_t i = 0; i < n; ++i) w[i] -= w[i] * decay;
  }
  ++slots.iterations;
  if (c.kind == "sgd") {
    if (c.momentum == 0) {
      for (size_t i = 0; i < n; ++i) w[i] -= g[i] * lr;
    } else {
      const T mu = static_cast<T>(c.momentum);
      for (size_t i = 0; i < n; ++i) {
        m[i] = m[i] * mu - g[i] * lr;
        w[i] += m[i];
      }
    }
    return;
  }
  if (c.kind != "adam" && c.kind != "adamw") throw std::logic_error("unknown optimizer " + c.kind);
  const double t = static_cast<double>(slots.iterations);
  const T alpha = static_cast<T>(lr_now * std::sqrt(1 - std::pow(c.beta2, t)) / (1 - std::pow(c.beta1, t)));
  const T one_minus_b1 = static_cast<T>(1 - c.beta1), one_minus_b2 = static_cast<T>(1 - c.beta2), eps = static_cast<T>(c.eps);
  T* v = slots.v.data();
  for (size_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * one_minus_b1;
    v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] -= m[i] * alpha / (std::sqrt(v[i]) + eps);
  }
}

template void optimizer_step<float>(const OptimizerConfig&, std::vector<float>&, const std::vector<float>&, OptimizerSlots<float>&);
template void optimizer_step<double>(const OptimizerConfig&, std::vector<double>&, const std::vector<double>&, OptimizerSlots<double>&);

}  // namespace pipec

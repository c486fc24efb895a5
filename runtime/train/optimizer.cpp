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
  return c;
}

namespace {

// sgd: plain steps, or Keras' momentum form with the velocity in `m`.
template <class T>
void sgd_step(const OptimizerConfig& c, size_t n, T* w, const T* g, T* m) {
  const T lr = static_cast<T>(c.lr);
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
void adam_step(const OptimizerConfig& c, size_t n, int64_t iterations, T* w, const T* g, T* m, T* v) {
  const double t = static_cast<double>(iterations);
  const T alpha = static_cast<T>(c.lr * std::sqrt(1 - std::pow(c.beta2, t)) / (1 - std::pow(c.beta1, t)));
  const T one_minus_b1 = static_cast<T>(1 - c.beta1), one_minus_b2 = static_cast<T>(1 - c.beta2),
          eps = static_cast<T>(c.eps);
  for (size_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * one_minus_b1;
    v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] -= m[i] * alpha / (std::sqrt(v[i]) + eps);
  }
}

}  // namespace

template <class T>
void optimizer_step(const OptimizerConfig& c, std::vector<T>& params, const std::vector<T>& grads,
                    OptimizerSlots<T>& slots) {
  const size_t n = params.size();
  const bool has_second_moment = c.kind != OptimizerKind::Sgd;
  if (slots.m.size() != n) slots.m.assign(n, T(0));
  if (has_second_moment && slots.v.size() != n) slots.v.assign(n, T(0));
  T* w = params.data();
  if (c.weight_decay > 0) {
    const T decay = static_cast<T>(c.lr * c.weight_decay);
    for (size_t i = 0; i < n; ++i) w[i] -= w[i] * decay;
  }
  ++slots.iterations;
  switch (c.kind) {
    case OptimizerKind::Sgd: sgd_step(c, n, w, grads.data(), slots.m.data()); return;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
      adam_step(c, n, slots.iterations, w, grads.data(), slots.m.data(), slots.v.data());
      return;
  }
}

template void optimizer_step<float>(const OptimizerConfig&, std::vector<float>&, const std::vector<float>&,
                                    OptimizerSlots<float>&);
template void optimizer_step<double>(const OptimizerConfig&, std::vector<double>&, const std::vector<double>&,
                                     OptimizerSlots<double>&);

}  // namespace pipec

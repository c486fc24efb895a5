// Losses of the reference executor, as Keras computes them: the mean over every position (the last axis
// averaged too for mse, mae, huber and binary_cross_entropy; cross_entropy sums over its class axis).
// From logits where the model ends in softmax or sigmoid (log-softmax and softplus forms, finite for any
// logits); from probabilities otherwise, clipped to [1e-7, 1 - 1e-7] as Keras clips them.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "runtime/train/ref/ref_kernels.h"

namespace pipec::ref {

namespace {

constexpr double kEps = kProbabilityEpsilon;

double clip_probability(double p) { return std::clamp(p, kEps, 1.0 - kEps); }
// TensorFlow's clip passes the gradient where lo <= p <= hi.
bool inside(double p) { return p >= kEps && p <= 1.0 - kEps; }

template <class T>
int64_t label_of(const LossSpec& s, const T* target, int64_t position) {
  double v = target[position];
  if (!(v >= 0 && v < static_cast<double>(s.classes)) || v != std::floor(v)) {
    int64_t positions_per_example = s.per_example / s.classes;
    throw std::runtime_error(
        fmt::format("cross_entropy: example {} of the batch has class label {} (position {}), not one of 0..{}",
                    position / std::max<int64_t>(positions_per_example, 1), v,
                    position % std::max<int64_t>(positions_per_example, 1), s.classes - 1));
  }
  return static_cast<int64_t>(v);
}

// The log-sum-exp of one position's logits.
template <class T>
double log_sum_exp(const T* z, int64_t n) {
  double m = -INFINITY;
  for (int64_t c = 0; c < n; ++c) m = std::max(m, static_cast<double>(z[c]));
  double s = 0;
  for (int64_t c = 0; c < n; ++c) s += std::exp(z[c] - m);
  return m + std::log(s);
}

// One position of cross_entropy: its loss, and its gradient when `grad` is not null.
template <class T>
double cross_entropy_position(const LossSpec& s, const T* p, const T* target, int64_t position, T* grad, double scale) {
  const int64_t n = s.classes;
  const T* z = p + position * n;
  double total = 0;
  if (s.from_logits) {
    double lse = log_sum_exp(z, n);
    if (s.sparse) {
      int64_t label = label_of(s, target, position);
      total = lse - z[label];
      if (grad)
        for (int64_t c = 0; c < n; ++c)
          grad[position * n + c] = static_cast<T>(scale * (std::exp(z[c] - lse) - (c == label ? 1.0 : 0.0)));
    } else {
      const T* t = target + position * n;
      double st = 0, tz = 0;
      for (int64_t c = 0; c < n; ++c) {
        st += t[c];
        tz += static_cast<double>(t[c]) * z[c];
      }
      total = lse * st - tz;
      if (grad)
        for (int64_t c = 0; c < n; ++c)
          grad[position * n + c] = static_cast<T>(scale * (std::exp(z[c] - lse) * st - t[c]));
    }
    return total;
  }
  if (s.sparse) {
    // Keras: clip the probabilities, then the log-softmax of their logarithms: -log(q_l / sum q).
    int64_t label = label_of(s, target, position);
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += clip_probability(z[c]);
    total = -std::log(clip_probability(z[label])) + std::log(sum);
    if (grad)
      for (int64_t c = 0; c < n; ++c) {
        double q = clip_probability(z[c]);
        double d = (c == label ? -1.0 / q : 0.0) + 1.0 / sum;
        grad[position * n + c] = static_cast<T>(inside(z[c]) ? scale * d : 0.0);
      }
    return total;
  }
  // Keras: normalize the probabilities to sum to one, clip, then -sum(t log q).
  const T* t = target + position * n;
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) sum += z[c];
  std::vector<double> g(n);
  double gq = 0;
  for (int64_t c = 0; c < n; ++c) {
    double q = z[c] / sum;
    total -= t[c] * std::log(clip_probability(q));
    g[c] = inside(q) ? -t[c] / clip_probability(q) : 0.0;
    gq += g[c] * q;
  }
  if (grad)
    for (int64_t c = 0; c < n; ++c) grad[position * n + c] = static_cast<T>(scale * (g[c] - gq) / sum);
  return total;
}

// One value of the element-wise losses: its loss and its derivative.
std::pair<double, double> elementwise(const LossSpec& s, double p, double t) {
  switch (s.kind) {
    case LossKind::Mse: return {(p - t) * (p - t), 2 * (p - t)};
    case LossKind::Mae: return {std::fabs(p - t), p > t ? 1.0 : p < t ? -1.0 : 0.0};
    case LossKind::Huber: {
      double e = p - t, a = std::fabs(e);
      if (a <= s.delta) return {0.5 * e * e, e};
      return {s.delta * (a - 0.5 * s.delta), e > 0 ? s.delta : -s.delta};
    }
    case LossKind::BinaryCrossEntropy: {
      if (s.from_logits) {
        double z = p;
        double loss = std::max(z, 0.0) - z * t + std::log1p(std::exp(-std::fabs(z)));
        double sig = z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z));
        return {loss, sig - t};
      }
      double q = clip_probability(p);
      double loss = -(t * std::log(q) + (1 - t) * std::log(1 - q));
      return {loss, inside(p) ? -(t / q - (1 - t) / (1 - q)) : 0.0};
    }
    case LossKind::CrossEntropy: break;  // over a class axis, not element-wise: run() takes it apart
  }
  throw std::logic_error(fmt::format("{} is not an element-wise loss", loss_kind_name(s.kind)));
}

template <class T>
double run(const LossSpec& s, const T* p, const T* t, T* grad) {
  if (s.kind == LossKind::CrossEntropy) {
    int64_t positions = s.batch * (s.per_example / s.classes);
    double scale = 1.0 / static_cast<double>(positions);
    double total = 0;
    for (int64_t k = 0; k < positions; ++k) total += cross_entropy_position(s, p, t, k, grad, scale);
    return total * scale;
  }
  int64_t n = s.batch * s.per_example;
  double scale = 1.0 / static_cast<double>(n);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto [l, d] = elementwise(s, p[i], t[i]);
    total += l;
    if (grad) grad[i] = static_cast<T>(d * scale);
  }
  return total * scale;
}

}  // namespace

template <class T>
double loss(const LossSpec& s, const T* prediction, const T* target) {
  return run<T>(s, prediction, target, nullptr);
}

template <class T>
void loss_backward(const LossSpec& s, const T* prediction, const T* target, T* dprediction) {
  run<T>(s, prediction, target, dprediction);
}

template double loss<float>(const LossSpec&, const float*, const float*);
template double loss<double>(const LossSpec&, const double*, const double*);
template void loss_backward<float>(const LossSpec&, const float*, const float*, float*);
template void loss_backward<double>(const LossSpec&, const double*, const double*, double*);

}  // namespace pipec::ref

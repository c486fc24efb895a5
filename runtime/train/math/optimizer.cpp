#include "runtime/train/math/optimizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace pipec {

OptimizerConfig OptimizerConfig::from_node(const GraphNode& n) { return from_attrs(n.attrs_as<OptimizerAttrs>()); }

OptimizerConfig OptimizerConfig::from_attrs(const OptimizerAttrs& a) {
  OptimizerConfig c;
  c.kind = a.kind;
  c.lr = a.lr.value_or(c.lr);
  c.beta1 = a.beta1.value_or(c.beta1);
  c.beta2 = a.beta2.value_or(c.beta2);
  c.eps = a.eps.value_or(c.eps);
  c.weight_decay = a.weight_decay.value_or(c.weight_decay);
  c.momentum = a.momentum.value_or(c.momentum);
  c.global_clipnorm = a.global_clipnorm.value_or(c.global_clipnorm);
  c.schedule.initial = c.lr;
  if (a.schedule) c.schedule = LrSchedule::from_attrs(*a.schedule, c.lr);
  return c;
}

namespace {

// sgd: plain steps, or Keras' momentum form with the velocity in `m`.
template <class T>
void sgd_step(const OptimizerConfig& c, double lr_now, int64_t n, T* w, const T* g, T* m) {
  const T lr = static_cast<T>(lr_now);
  if (c.momentum == 0) {
    for (int64_t i = 0; i < n; ++i) w[i] -= g[i] * lr;
    return;
  }
  const T mu = static_cast<T>(c.momentum);
  for (int64_t i = 0; i < n; ++i) {
    m[i] = m[i] * mu - g[i] * lr;
    w[i] += m[i];
  }
}

// adam and adamw (adamw is adam with its own default weight decay, applied before the step). `alpha`
// is the bias-corrected rate of this step.
template <class T>
void adam_step(const OptimizerConfig& c, T alpha, int64_t n, T* w, const T* g, T* m, T* v) {
  const T one_minus_b1 = static_cast<T>(1 - c.beta1), one_minus_b2 = static_cast<T>(1 - c.beta2),
          eps = static_cast<T>(c.eps);
  for (int64_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * one_minus_b1;
    v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] -= m[i] * alpha / (std::sqrt(v[i]) + eps);
  }
}

// The global norm of the gradients (tf.clip_by_global_norm's): sums of squares over fixed blocks, in
// parallel, then the blocks in order, so the result does not depend on how `parallel` splits the work.
template <class T>
double global_norm(int64_t n, const T* g, const ParallelFor& parallel) {
  const int64_t blocks = (n + kNormBlock - 1) / kNormBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  run_split(parallel, blocks, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      double sum = 0;
      for (int64_t i = b * kNormBlock, e = std::min(n, (b + 1) * kNormBlock); i < e; ++i)
        sum += static_cast<double>(g[i]) * static_cast<double>(g[i]);
      partial[static_cast<size_t>(b)] = sum;
    }
  });
  double sum = 0;
  for (double p : partial) sum += p;
  return std::sqrt(sum);
}

}  // namespace

template <class T>
void optimizer_step(const OptimizerConfig& c, std::vector<T>& params, const std::vector<T>& grads,
                    OptimizerSlots<T>& slots, const ParallelFor& parallel, const NativeKernel* kernel) {
  const int64_t n = static_cast<int64_t>(params.size());
  const bool has_second_moment = c.kind != OptimizerKind::Sgd;
  if (slots.m.size() != params.size()) slots.m.assign(params.size(), T(0));
  if (has_second_moment && slots.v.size() != params.size()) slots.v.assign(params.size(), T(0));
  // The rate is the schedule's at the step count before the step (OptimizerConfig::lr is only the
  // number the schedule starts from).
  const double lr_now = c.schedule.at(slots.iterations);
  slots.last_lr = lr_now;
  slots.last_grad_norm = 0;
  // Global-norm clipping (tf.clip_by_global_norm): the gradients are scaled as they are read, so the
  // gradient buffer stays what the backward pass computed.
  T clip_scale = T(1);
  bool clip = false;
  if (c.global_clipnorm > 0) {
    slots.last_grad_norm = global_norm(n, grads.data(), parallel);
    if (slots.last_grad_norm > c.global_clipnorm) {
      clip = true;
      clip_scale = static_cast<T>(c.global_clipnorm / slots.last_grad_norm);
    }
  }
  ++slots.iterations;
  const T decay = static_cast<T>(lr_now * c.weight_decay);
  const double t = static_cast<double>(slots.iterations);
  const T alpha = static_cast<T>(lr_now * std::sqrt(1 - std::pow(c.beta2, t)) / (1 - std::pow(c.beta1, t)));
  T* w = params.data();
  T* m = slots.m.data();
  T* v = has_second_moment ? slots.v.data() : nullptr;
  // The compiled update (emit_optimizer.h) does what the loop below does, per part.
  if (kernel) {
    if constexpr (!std::is_same_v<T, float>) {
      throw std::logic_error("optimizer_step: a compiled update is f32 only");
    } else {
      const OptimizerKernelScalars scalars{c.kind == OptimizerKind::Sgd ? static_cast<T>(lr_now) : alpha, decay,
                                           clip_scale};
      std::atomic<bool> failed{false};
      run_split(parallel, n, [&](int64_t begin, int64_t end) {
        const void* in[2] = {grads.data() + begin, &scalars};
        void* out[3] = {w + begin, m + begin, v ? v + begin : nullptr};
        PipecKernelArgs args{in, out, end - begin, begin, 0, 0};
        if (kernel->fn(&args) != 0) failed = true;
      });
      if (failed) throw std::logic_error("optimizer_step: the compiled update failed");
    }
    return;
  }
  // One pass over the flat buffers, a part per thread: clipped gradients, weight decay (applied first,
  // as Keras does), then the optimizer's update. Parts of kPart elements keep the clipped copy in cache.
  constexpr int64_t kPart = 4096;
  run_split(parallel, n, [&](int64_t begin, int64_t end) {
    std::vector<T> clipped(clip ? kPart : 0);
    for (int64_t b = begin; b < end; b += kPart) {
      const int64_t count = std::min(end - b, kPart);
      const T* g = grads.data() + b;
      if (clip) {
        for (int64_t i = 0; i < count; ++i) clipped[static_cast<size_t>(i)] = g[i] * clip_scale;
        g = clipped.data();
      }
      T* wb = w + b;
      if (c.weight_decay > 0)
        for (int64_t i = 0; i < count; ++i) wb[i] -= wb[i] * decay;
      switch (c.kind) {
        case OptimizerKind::Sgd: sgd_step(c, lr_now, count, wb, g, m + b); break;
        case OptimizerKind::Adam:
        case OptimizerKind::AdamW: adam_step(c, alpha, count, wb, g, m + b, v + b); break;
      }
    }
  });
}

template void optimizer_step<float>(const OptimizerConfig&, std::vector<float>&, const std::vector<float>&,
                                    OptimizerSlots<float>&, const ParallelFor&, const NativeKernel*);
template void optimizer_step<double>(const OptimizerConfig&, std::vector<double>&, const std::vector<double>&,
                                     OptimizerSlots<double>&, const ParallelFor&, const NativeKernel*);

}  // namespace pipec

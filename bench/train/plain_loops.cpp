#include "bench/train/plain_loops.h"

#include <cmath>

namespace pipec::bench {

// Compiled at O3 (bench/CMakeLists.txt) with one clone per instruction set, picked at run time, like the
// JIT's host-CPU code.
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

CLONES void loop_forward(Act a, const float* x, float* y, int64_t n) {
  switch (a) {
    case Act::Relu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
      break;
    case Act::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.2f * x[i];
      break;
    case Act::Tanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      break;
    case Act::Sigmoid:
      for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      break;
    case Act::Gelu:
      for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
      break;
  }
}

CLONES void loop_backward(Act a, const float* v, const float* dy, float* dx, int64_t n) {
  switch (a) {
    case Act::Relu:
      for (int64_t i = 0; i < n; ++i) dx[i] = v[i] > 0 ? dy[i] : 0.0f;
      break;
    case Act::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) dx[i] = v[i] > 0 ? dy[i] : 0.2f * dy[i];
      break;
    case Act::Tanh:
      for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - v[i] * v[i]);
      break;
    case Act::Sigmoid:
      for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * v[i] * (1.0f - v[i]);
      break;
    case Act::Gelu:
      for (int64_t i = 0; i < n; ++i) {
        float cdf = 0.5f * (1.0f + std::erf(v[i] * 0.70710678f));
        float pdf = 0.39894228f * std::exp(-0.5f * v[i] * v[i]);
        dx[i] = dy[i] * (cdf + v[i] * pdf);
      }
      break;
  }
}

}  // namespace pipec::bench

// Activations, softmax, dropout and normalization of the reference executor.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/core/philox.h"
#include "runtime/ops/batch_statistics.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec::ref {

template <class T>
void leaky_relu(int64_t n, double alpha, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : static_cast<T>(alpha * x[i]);
}

template <class T>
void leaky_relu_backward(int64_t n, double alpha, const T* x, const T* dy, T* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0 ? dy[i] : static_cast<T>(alpha * dy[i]);
}

// gelu(x) = x * Phi(x), Phi the standard normal CDF (the exact form, not the tanh approximation).
template <class T>
void gelu(int64_t n, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) {
    double v = x[i];
    y[i] = static_cast<T>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
}

template <class T>
void gelu_backward(int64_t n, const T* x, const T* dy, T* dx) {
  const double inv_sqrt_2pi = 0.3989422804014327;
  for (int64_t i = 0; i < n; ++i) {
    double v = x[i];
    double cdf = 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
    double pdf = inv_sqrt_2pi * std::exp(-0.5 * v * v);
    dx[i] = static_cast<T>(dy[i] * (cdf + v * pdf));
  }
}

template <class T>
void softmax(int64_t outer, int64_t len, int64_t inner, const T* x, T* y) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const T* xp = x + o * len * inner + in;
      T* yp = y + o * len * inner + in;
      double m = -INFINITY;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, static_cast<double>(xp[k * inner]));
      double s = 0;
      for (int64_t k = 0; k < len; ++k) s += std::exp(xp[k * inner] - m);
      for (int64_t k = 0; k < len; ++k) yp[k * inner] = static_cast<T>(std::exp(xp[k * inner] - m) / s);
    }
}

template <class T>
void softmax_backward(int64_t outer, int64_t len, int64_t inner, const T* y, const T* dy, T* dx) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * len * inner + in;
      double dot = 0;
      for (int64_t k = 0; k < len; ++k) dot += static_cast<double>(dy[base + k * inner]) * y[base + k * inner];
      for (int64_t k = 0; k < len; ++k)
        dx[base + k * inner] = static_cast<T>(static_cast<double>(y[base + k * inner]) * (dy[base + k * inner] - dot));
    }
}

template <class T>
void dropout_mask(int64_t batch, int64_t per_example, double rate, uint64_t seed, uint64_t stream, uint64_t step,
                  T* mask, int64_t first_example) {
  const double keep = 1.0 / (1.0 - rate);
  for (int64_t e = 0; e < batch; ++e) {
    RandomStream r(seed, kDropoutStreamBase + stream, static_cast<uint64_t>(first_example + e), step);
    for (int64_t i = 0; i < per_example; ++i)
      mask[e * per_example + i] = r.uniform_float() >= rate ? static_cast<T>(keep) : T(0);
  }
}

template <class T>
void multiply(int64_t n, const T* a, const T* b, T* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

template <class T>
void batch_norm(int64_t rows, int64_t channels, double epsilon, const T* x, const T* gamma, const T* beta, T* y,
                T* mean, T* variance) {
  // One pass over x (runtime/ops/batch_statistics.h); the variance is biased, as Keras uses it for
  // normalizing and for the moving variance.
  std::vector<double> m(channels), v(channels);
  batch_statistics<T>(rows, channels, x, m.data(), v.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      double inv = 1.0 / std::sqrt(v[c] + epsilon);
      y[r * channels + c] = static_cast<T>((x[r * channels + c] - m[c]) * inv * gamma[c] + beta[c]);
    }
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = static_cast<T>(m[c]);
    variance[c] = static_cast<T>(v[c]);
  }
}

template <class T>
void batch_norm_inference(int64_t rows, int64_t channels, double epsilon, const T* x, const T* gamma, const T* beta,
                          const T* moving_mean, const T* moving_variance, T* y, T* mean, T* variance) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      double inv = 1.0 / std::sqrt(static_cast<double>(moving_variance[c]) + epsilon);
      y[r * channels + c] =
          static_cast<T>((x[r * channels + c] - static_cast<double>(moving_mean[c])) * inv * gamma[c] + beta[c]);
    }
  std::copy(moving_mean, moving_mean + channels, mean);
  std::copy(moving_variance, moving_variance + channels, variance);
}

template <class T>
void batch_norm_backward(int64_t rows, int64_t channels, double epsilon, const T* x, const T* dy, const T* gamma,
                         const T* mean, const T* variance, T* dx, T* dgamma, T* dbeta) {
  std::vector<double> sum_dy(channels, 0.0), sum_dy_xhat(channels, 0.0), inv(channels);
  for (int64_t c = 0; c < channels; ++c) inv[c] = 1.0 / std::sqrt(static_cast<double>(variance[c]) + epsilon);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      double xhat = (x[r * channels + c] - static_cast<double>(mean[c])) * inv[c];
      sum_dy[c] += dy[r * channels + c];
      sum_dy_xhat[c] += dy[r * channels + c] * xhat;
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      double xhat = (x[r * channels + c] - static_cast<double>(mean[c])) * inv[c];
      dx[r * channels + c] =
          static_cast<T>(gamma[c] * inv[c] / rows *
                         (rows * static_cast<double>(dy[r * channels + c]) - sum_dy[c] - xhat * sum_dy_xhat[c]));
    }
  for (int64_t c = 0; c < channels; ++c) {
    dgamma[c] = static_cast<T>(sum_dy_xhat[c]);
    dbeta[c] = static_cast<T>(sum_dy[c]);
  }
}

template <class T>
void layer_norm(int64_t rows, int64_t channels, double epsilon, const T* x, const T* gamma, const T* beta, T* y,
                T* mean, T* variance) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * channels;
    double m = 0, v = 0;
    for (int64_t c = 0; c < channels; ++c) m += xr[c];
    m /= channels;
    for (int64_t c = 0; c < channels; ++c) v += (xr[c] - m) * (xr[c] - m);
    v /= channels;
    double inv = 1.0 / std::sqrt(v + epsilon);
    for (int64_t c = 0; c < channels; ++c) y[r * channels + c] = static_cast<T>((xr[c] - m) * inv * gamma[c] + beta[c]);
    mean[r] = static_cast<T>(m);
    variance[r] = static_cast<T>(v);
  }
}

template <class T>
void layer_norm_backward(int64_t rows, int64_t channels, double epsilon, const T* x, const T* dy, const T* gamma,
                         const T* mean, const T* variance, T* dx, T* dgamma, T* dbeta) {
  std::vector<double> dg(channels, 0.0), db(channels, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * channels;
    const T* dr = dy + r * channels;
    double inv = 1.0 / std::sqrt(static_cast<double>(variance[r]) + epsilon);
    double m = mean[r];
    double sum_g = 0, sum_g_xhat = 0;
    for (int64_t c = 0; c < channels; ++c) {
      double xhat = (xr[c] - m) * inv;
      double gx = static_cast<double>(dr[c]) * gamma[c];
      sum_g += gx;
      sum_g_xhat += gx * xhat;
      dg[c] += dr[c] * xhat;
      db[c] += dr[c];
    }
    for (int64_t c = 0; c < channels; ++c) {
      double xhat = (xr[c] - m) * inv;
      double gx = static_cast<double>(dr[c]) * gamma[c];
      dx[r * channels + c] = static_cast<T>(inv / channels * (channels * gx - sum_g - xhat * sum_g_xhat));
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    dgamma[c] = static_cast<T>(dg[c]);
    dbeta[c] = static_cast<T>(db[c]);
  }
}

#define INSTANTIATE(T)                                                                                                 \
  template void leaky_relu<T>(int64_t, double, const T*, T*);                                                          \
  template void leaky_relu_backward<T>(int64_t, double, const T*, const T*, T*);                                       \
  template void gelu<T>(int64_t, const T*, T*);                                                                        \
  template void gelu_backward<T>(int64_t, const T*, const T*, T*);                                                     \
  template void softmax<T>(int64_t, int64_t, int64_t, const T*, T*);                                                   \
  template void softmax_backward<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);                                \
  template void dropout_mask<T>(int64_t, int64_t, double, uint64_t, uint64_t, uint64_t, T*, int64_t);                  \
  template void multiply<T>(int64_t, const T*, const T*, T*);                                                          \
  template void batch_norm<T>(int64_t, int64_t, double, const T*, const T*, const T*, T*, T*, T*);                     \
  template void batch_norm_inference<T>(int64_t, int64_t, double, const T*, const T*, const T*, const T*, const T*,    \
                                        T*, T*, T*);                                                                   \
  template void batch_norm_backward<T>(int64_t, int64_t, double, const T*, const T*, const T*, const T*, const T*, T*, \
                                       T*, T*);                                                                        \
  template void layer_norm<T>(int64_t, int64_t, double, const T*, const T*, const T*, T*, T*, T*);                     \
  template void layer_norm_backward<T>(int64_t, int64_t, double, const T*, const T*, const T*, const T*, const T*, T*, \
                                       T*, T*);
INSTANTIATE(float)
INSTANTIATE(double)
#undef INSTANTIATE

}  // namespace pipec::ref

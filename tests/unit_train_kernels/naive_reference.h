// Naive f64 loops for every training kernel, written from the definitions (TensorFlow/Keras semantics)
// and independent of the kernels' code: the oracle the oneDNN kernels are compared against.
//
// Each reference also returns, per output, the sum of the absolute values of the terms it added (the
// "magnitude") and the largest number of terms: with those, tolerance() bounds the error of any f32
// evaluation order (see train_kernel_test_util.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pipec::train::naive {

using Vec = std::vector<double>;

struct Result {
  Vec value;
  Vec magnitude;      // sum of |terms| per output
  int64_t terms = 0;  // most terms added into one output
};

// TensorFlow's padding for one dimension (tf.nn.conv2d docs): same -> out = ceil(in / s),
// pad_total = max((out - 1) * s + window - in, 0), the smaller half before.
struct Pad {
  int64_t out, before;
};
inline Pad tf_pad(int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
  int64_t window = (k - 1) * d + 1;
  if (!same) return {(in - window) / s + 1, 0};
  int64_t out = (in + s - 1) / s;
  int64_t total = std::max<int64_t>((out - 1) * s + window - in, 0);
  return {out, total / 2};
}

struct Conv {
  int64_t n, h, w, c, f, kh, kw, sh = 1, sw = 1, dh = 1, dw = 1;
  bool same = false;
  Pad rows() const { return tf_pad(h, kh, sh, dh, same); }
  Pad cols() const { return tf_pad(w, kw, sw, dw, same); }
};

// y[n, oh, ow, f] = b[f] + sum x[n, oh*s + i*d - pad, ow*s + j*d - pad, c] * w[i, j, c, f] (HWIO).
inline Result conv2d(const Conv& p, const Vec& x, const Vec& w, const Vec* b) {
  Pad r = p.rows(), q = p.cols();
  Result out{Vec(p.n * r.out * q.out * p.f, 0.0), Vec(p.n * r.out * q.out * p.f, 0.0), p.kh * p.kw * p.c + 1};
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < r.out; ++oh)
      for (int64_t ow = 0; ow < q.out; ++ow)
        for (int64_t f = 0; f < p.f; ++f) {
          double acc = b ? (*b)[f] : 0, mag = b ? std::abs((*b)[f]) : 0;
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              int64_t ih = oh * p.sh + i * p.dh - r.before, iw = ow * p.sw + j * p.dw - q.before;
              if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
              for (int64_t c = 0; c < p.c; ++c) {
                double t = x[((n * p.h + ih) * p.w + iw) * p.c + c] * w[((i * p.kw + j) * p.c + c) * p.f + f];
                acc += t;
                mag += std::abs(t);
              }
            }
          int64_t o = ((n * r.out + oh) * q.out + ow) * p.f + f;
          out.value[o] = acc;
          out.magnitude[o] = mag;
        }
  return out;
}

// The gradients of conv2d: every (input, weight, output) triple of the forward adds one term.
struct ConvGrads {
  Result dx, dw, db;
};
inline ConvGrads conv2d_backward(const Conv& p, const Vec& x, const Vec& w, const Vec& dy) {
  Pad r = p.rows(), q = p.cols();
  ConvGrads g;
  g.dx = {Vec(x.size(), 0.0), Vec(x.size(), 0.0), p.kh * p.kw * p.f};
  g.dw = {Vec(w.size(), 0.0), Vec(w.size(), 0.0), p.n * r.out * q.out};
  g.db = {Vec(p.f, 0.0), Vec(p.f, 0.0), p.n * r.out * q.out};
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < r.out; ++oh)
      for (int64_t ow = 0; ow < q.out; ++ow)
        for (int64_t f = 0; f < p.f; ++f) {
          double d = dy[((n * r.out + oh) * q.out + ow) * p.f + f];
          g.db.value[f] += d;
          g.db.magnitude[f] += std::abs(d);
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              int64_t ih = oh * p.sh + i * p.dh - r.before, iw = ow * p.sw + j * p.dw - q.before;
              if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
              for (int64_t c = 0; c < p.c; ++c) {
                int64_t xi = ((n * p.h + ih) * p.w + iw) * p.c + c, wi = ((i * p.kw + j) * p.c + c) * p.f + f;
                g.dx.value[xi] += d * w[wi];
                g.dx.magnitude[xi] += std::abs(d * w[wi]);
                g.dw.value[wi] += d * x[xi];
                g.dw.magnitude[wi] += std::abs(d * x[xi]);
              }
            }
        }
  return g;
}

// conv2d_transpose (Keras): out = in * s (same) or in * s + max(k - s, 0) (valid); the padding is the
// forward convolution's from `out` back to `in`. Kernel HWOI [kh, kw, f, c]. Each input pixel scatters
// x * w to y[ih * s + i - pad].
struct Transpose {
  int64_t n, h, w, c, f, kh, kw, sh = 1, sw = 1;
  bool same = false;
  Pad rows() const { return dim(h, kh, sh); }
  Pad cols() const { return dim(w, kw, sw); }
  Pad dim(int64_t in, int64_t k, int64_t s) const {
    int64_t out = same ? in * s : in * s + std::max<int64_t>(k - s, 0);
    int64_t before = same ? std::max<int64_t>((in - 1) * s + k - out, 0) / 2 : 0;
    return {out, before};
  }
};

inline Result conv2d_transpose(const Transpose& p, const Vec& x, const Vec& w, const Vec* b) {
  Pad r = p.rows(), q = p.cols();
  int64_t size = p.n * r.out * q.out * p.f;
  Result out{Vec(size, 0.0), Vec(size, 0.0), p.kh * p.kw * p.c + 1};
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < r.out; ++oh)
      for (int64_t ow = 0; ow < q.out; ++ow)
        for (int64_t f = 0; f < p.f; ++f) {
          int64_t o = ((n * r.out + oh) * q.out + ow) * p.f + f;
          out.value[o] = b ? (*b)[f] : 0;
          out.magnitude[o] = b ? std::abs((*b)[f]) : 0;
        }
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t ih = 0; ih < p.h; ++ih)
      for (int64_t iw = 0; iw < p.w; ++iw)
        for (int64_t i = 0; i < p.kh; ++i)
          for (int64_t j = 0; j < p.kw; ++j) {
            int64_t oh = ih * p.sh + i - r.before, ow = iw * p.sw + j - q.before;
            if (oh < 0 || oh >= r.out || ow < 0 || ow >= q.out) continue;
            for (int64_t f = 0; f < p.f; ++f)
              for (int64_t c = 0; c < p.c; ++c) {
                double t = x[((n * p.h + ih) * p.w + iw) * p.c + c] * w[((i * p.kw + j) * p.f + f) * p.c + c];
                int64_t o = ((n * r.out + oh) * q.out + ow) * p.f + f;
                out.value[o] += t;
                out.magnitude[o] += std::abs(t);
              }
          }
  return out;
}

inline ConvGrads conv2d_transpose_backward(const Transpose& p, const Vec& x, const Vec& w, const Vec& dy) {
  Pad r = p.rows(), q = p.cols();
  ConvGrads g;
  g.dx = {Vec(x.size(), 0.0), Vec(x.size(), 0.0), p.kh * p.kw * p.f};
  g.dw = {Vec(w.size(), 0.0), Vec(w.size(), 0.0), p.n * p.h * p.w};
  g.db = {Vec(p.f, 0.0), Vec(p.f, 0.0), p.n * r.out * q.out};
  for (int64_t i = 0; i < p.n * r.out * q.out; ++i)
    for (int64_t f = 0; f < p.f; ++f) {
      g.db.value[f] += dy[i * p.f + f];
      g.db.magnitude[f] += std::abs(dy[i * p.f + f]);
    }
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t ih = 0; ih < p.h; ++ih)
      for (int64_t iw = 0; iw < p.w; ++iw)
        for (int64_t i = 0; i < p.kh; ++i)
          for (int64_t j = 0; j < p.kw; ++j) {
            int64_t oh = ih * p.sh + i - r.before, ow = iw * p.sw + j - q.before;
            if (oh < 0 || oh >= r.out || ow < 0 || ow >= q.out) continue;
            for (int64_t f = 0; f < p.f; ++f)
              for (int64_t c = 0; c < p.c; ++c) {
                int64_t xi = ((n * p.h + ih) * p.w + iw) * p.c + c, wi = ((i * p.kw + j) * p.f + f) * p.c + c;
                double d = dy[((n * r.out + oh) * q.out + ow) * p.f + f];
                g.dx.value[xi] += d * w[wi];
                g.dx.magnitude[xi] += std::abs(d * w[wi]);
                g.dw.value[wi] += d * x[xi];
                g.dw.magnitude[wi] += std::abs(d * x[xi]);
              }
          }
  return g;
}

// dense: y[r, o] = b[o] + sum x[r, i] * w[i, o] ([in, out] kernel).
inline Result dense(int64_t rows, int64_t in, int64_t outs, const Vec& x, const Vec& w, const Vec* b) {
  Result out{Vec(rows * outs), Vec(rows * outs), in + 1};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < outs; ++o) {
      double acc = b ? (*b)[o] : 0, mag = b ? std::abs((*b)[o]) : 0;
      for (int64_t i = 0; i < in; ++i) {
        double t = x[r * in + i] * w[i * outs + o];
        acc += t;
        mag += std::abs(t);
      }
      out.value[r * outs + o] = acc;
      out.magnitude[r * outs + o] = mag;
    }
  return out;
}

inline ConvGrads dense_backward(int64_t rows, int64_t in, int64_t outs, const Vec& x, const Vec& w, const Vec& dy) {
  ConvGrads g;
  g.dx = {Vec(rows * in), Vec(rows * in), outs};
  g.dw = {Vec(in * outs), Vec(in * outs), rows};
  g.db = {Vec(outs), Vec(outs), rows};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < outs; ++o) {
      double d = dy[r * outs + o];
      g.db.value[o] += d;
      g.db.magnitude[o] += std::abs(d);
      for (int64_t i = 0; i < in; ++i) {
        g.dx.value[r * in + i] += d * w[i * outs + o];
        g.dx.magnitude[r * in + i] += std::abs(d * w[i * outs + o]);
        g.dw.value[i * outs + o] += d * x[r * in + i];
        g.dw.magnitude[i * outs + o] += std::abs(d * x[r * in + i]);
      }
    }
  return g;
}

// Pools (TensorFlow): same pads as conv2d; max ignores padding; avg divides by the real pixels only.
// The gradient of a max goes to the first maximum in window order (the tests use distinct values).
struct Pool {
  int64_t n, h, w, c, kh, kw, sh, sw;
  bool same = false, max = true;
  Pad rows() const { return tf_pad(h, kh, sh, 1, same); }
  Pad cols() const { return tf_pad(w, kw, sw, 1, same); }
};

template <class Visit>
void pool_windows(const Pool& p, Visit visit) {
  Pad r = p.rows(), q = p.cols();
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < r.out; ++oh)
      for (int64_t ow = 0; ow < q.out; ++ow)
        for (int64_t c = 0; c < p.c; ++c) {
          std::vector<int64_t> in;
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              int64_t ih = oh * p.sh + i - r.before, iw = ow * p.sw + j - q.before;
              if (ih >= 0 && ih < p.h && iw >= 0 && iw < p.w) in.push_back(((n * p.h + ih) * p.w + iw) * p.c + c);
            }
          visit(((n * r.out + oh) * q.out + ow) * p.c + c, in);
        }
}

inline Result pool(const Pool& p, const Vec& x) {
  Pad r = p.rows(), q = p.cols();
  int64_t size = p.n * r.out * q.out * p.c;
  Result out{Vec(size), Vec(size), p.kh * p.kw};
  pool_windows(p, [&](int64_t o, const std::vector<int64_t>& in) {
    double best = -INFINITY, sum = 0, mag = 0;
    for (int64_t i : in) {
      best = std::max(best, x[i]);
      sum += x[i];
      mag += std::abs(x[i]);
    }
    out.value[o] = p.max ? best : sum / double(in.size());
    out.magnitude[o] = p.max ? 0 : mag / double(in.size());
  });
  return out;
}

inline Result pool_backward(const Pool& p, const Vec& x, const Vec& dy) {
  Result g{Vec(x.size(), 0.0), Vec(x.size(), 0.0), p.kh * p.kw};
  pool_windows(p, [&](int64_t o, const std::vector<int64_t>& in) {
    if (p.max) {
      int64_t best = in[0];
      for (int64_t i : in)
        if (x[i] > x[best]) best = i;
      g.value[best] += dy[o];
      g.magnitude[best] += std::abs(dy[o]);
    } else {
      for (int64_t i : in) {
        g.value[i] += dy[o] / double(in.size());
        g.magnitude[i] += std::abs(dy[o]) / double(in.size());
      }
    }
  });
  return g;
}

// Normalization of `groups` groups of `count` values each; the group of element e is group_of(e).
// Batch norm: groups are channels, values the rows; layer norm: groups are rows, values the features.
struct Stats {
  Vec mean, variance, mean_square;  // biased variance, as Keras
};

template <class GroupOf>
Stats statistics(const Vec& x, int64_t groups, GroupOf group_of) {
  Stats s{Vec(groups, 0.0), Vec(groups, 0.0), Vec(groups, 0.0)};
  Vec count(groups, 0.0);
  for (size_t e = 0; e < x.size(); ++e) {
    s.mean[group_of(e)] += x[e];
    s.mean_square[group_of(e)] += x[e] * x[e];
    count[group_of(e)] += 1;
  }
  for (int64_t g = 0; g < groups; ++g) {
    s.mean[g] /= count[g];
    s.mean_square[g] /= count[g];
  }
  for (size_t e = 0; e < x.size(); ++e)
    s.variance[group_of(e)] += (x[e] - s.mean[group_of(e)]) * (x[e] - s.mean[group_of(e)]);
  for (int64_t g = 0; g < groups; ++g) s.variance[g] /= count[g];
  return s;
}

// y = gamma * (x - mean) / sqrt(var + eps) + beta; the parameter of element e is param_of(e).
template <class GroupOf, class ParamOf>
Vec normalize(const Vec& x, const Stats& s, double eps, const Vec& gamma, const Vec& beta, GroupOf group_of,
              ParamOf param_of) {
  Vec y(x.size());
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t g = group_of(e), p = param_of(e);
    y[e] = gamma[p] * (x[e] - s.mean[g]) / std::sqrt(s.variance[g] + eps) + beta[p];
  }
  return y;
}

// The gradient of normalize through the statistics: with xhat = (x - mean) * inv and g = dy * gamma,
// dx = inv * (g - mean_group(g) - xhat * mean_group(g * xhat)); dgamma = sum dy * xhat; dbeta = sum dy.
struct NormGrads {
  Vec dx, dgamma, dbeta;
};
template <class GroupOf, class ParamOf>
NormGrads normalize_backward(const Vec& x, const Stats& s, double eps, const Vec& gamma, const Vec& dy, int64_t groups,
                             int64_t params, GroupOf group_of, ParamOf param_of) {
  NormGrads r{Vec(x.size()), Vec(params, 0.0), Vec(params, 0.0)};
  Vec sum_g(groups, 0.0), sum_gx(groups, 0.0), count(groups, 0.0);
  auto xhat = [&](size_t e) { return (x[e] - s.mean[group_of(e)]) / std::sqrt(s.variance[group_of(e)] + eps); };
  for (size_t e = 0; e < x.size(); ++e) {
    double g = dy[e] * gamma[param_of(e)];
    sum_g[group_of(e)] += g;
    sum_gx[group_of(e)] += g * xhat(e);
    count[group_of(e)] += 1;
    r.dgamma[param_of(e)] += dy[e] * xhat(e);
    r.dbeta[param_of(e)] += dy[e];
  }
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t k = group_of(e);
    double inv = 1 / std::sqrt(s.variance[k] + eps);
    r.dx[e] = inv * (dy[e] * gamma[param_of(e)] - sum_g[k] / count[k] - xhat(e) * sum_gx[k] / count[k]);
  }
  return r;
}

// Activations and their derivatives, from the definitions.
inline double activation(int kind, double alpha, double x) {
  switch (kind) {
    case 1: return x > 0 ? x : 0;                                                                // relu
    case 2: return x > 0 ? x : alpha * x;                                                        // leaky_relu
    case 3: return std::tanh(x);                                                                 // tanh
    case 4: return 1 / (1 + std::exp(-x));                                                       // sigmoid
    case 5: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));                                 // gelu (exact)
    case 6: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));  // gelu (tanh)
  }
  return x;
}

inline double activation_derivative(int kind, double alpha, double x) {
  switch (kind) {
    case 1: return x > 0 ? 1 : 0;
    case 2: return x > 0 ? 1 : alpha;
    case 3: return 1 - std::tanh(x) * std::tanh(x);
    case 4: {
      double s = 1 / (1 + std::exp(-x));
      return s * (1 - s);
    }
    case 5: return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
    case 6: {
      double k = std::sqrt(2 / M_PI), u = k * (x + 0.044715 * x * x * x), t = std::tanh(u);
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
    }
  }
  return 1;
}

}  // namespace pipec::train::naive

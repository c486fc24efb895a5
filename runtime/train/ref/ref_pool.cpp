// Pools and upsampling of the reference executor.
#include <cmath>
#include <vector>

#include "runtime/train/ref/ref_kernels.h"

namespace pipec::ref {

namespace {

inline int64_t source(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t size) {
  int64_t i = o * stride - pad + k;
  return i >= 0 && i < size ? i : -1;
}

// The first maximum of a window (TensorFlow's max pool gradient goes to it): its offset in x, or -1.
template <class T>
int64_t window_argmax(const Window2d& g, const T* x, int64_t b, int64_t oy, int64_t ox, int64_t c) {
  int64_t best = -1;
  for (int64_t ky = 0; ky < g.k_h; ++ky) {
    int64_t iy = source(oy, ky, g.stride_h, g.pad_top, g.in_h);
    if (iy < 0) continue;
    for (int64_t kx = 0; kx < g.k_w; ++kx) {
      int64_t ix = source(ox, kx, g.stride_w, g.pad_left, g.in_w);
      if (ix < 0) continue;
      int64_t at = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + c;
      if (best < 0 || x[at] > x[best]) best = at;
    }
  }
  return best;
}

// How many window positions fall inside the input (the divisor of an average).
int64_t window_count(const Window2d& g, int64_t oy, int64_t ox) {
  int64_t n = 0;
  for (int64_t ky = 0; ky < g.k_h; ++ky)
    for (int64_t kx = 0; kx < g.k_w; ++kx)
      if (source(oy, ky, g.stride_h, g.pad_top, g.in_h) >= 0 && source(ox, kx, g.stride_w, g.pad_left, g.in_w) >= 0)
        ++n;
  return n;
}

// TensorFlow's half-pixel bilinear weights along one axis: for each output index the two source
// indices and the weight of the upper one.
struct Lerp {
  int64_t lo, hi;
  double w;
};

std::vector<Lerp> lerps(int64_t in, int64_t out) {
  std::vector<Lerp> v(out);
  double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t o = 0; o < out; ++o) {
    double s = (o + 0.5) * scale - 0.5;
    double f = std::floor(s);
    v[o].lo = std::max<int64_t>(static_cast<int64_t>(f), 0);
    v[o].hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(s)), in - 1);
    v[o].w = s - f;
  }
  return v;
}

}  // namespace

template <class T>
void max_pool2d(const Window2d& g, const T* x, T* y) {
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t c = 0; c < g.out_c; ++c) {
          int64_t at = window_argmax(g, x, b, oy, ox, c);
          y[((b * g.out_h + oy) * g.out_w + ox) * g.out_c + c] = at < 0 ? T(0) : x[at];
        }
}

template <class T>
void max_pool2d_backward(const Window2d& g, const T* x, const T* dy, T* dx) {
  int64_t n = g.batch * g.in_h * g.in_w * g.in_c;
  std::vector<double> acc(n, 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t c = 0; c < g.out_c; ++c) {
          int64_t at = window_argmax(g, x, b, oy, ox, c);
          if (at >= 0) acc[at] += dy[((b * g.out_h + oy) * g.out_w + ox) * g.out_c + c];
        }
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<T>(acc[i]);
}

template <class T>
void avg_pool2d(const Window2d& g, const T* x, T* y) {
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        int64_t count = window_count(g, oy, ox);
        for (int64_t c = 0; c < g.out_c; ++c) {
          double s = 0;
          for (int64_t ky = 0; ky < g.k_h; ++ky) {
            int64_t iy = source(oy, ky, g.stride_h, g.pad_top, g.in_h);
            if (iy < 0) continue;
            for (int64_t kx = 0; kx < g.k_w; ++kx) {
              int64_t ix = source(ox, kx, g.stride_w, g.pad_left, g.in_w);
              if (ix >= 0) s += x[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + c];
            }
          }
          y[((b * g.out_h + oy) * g.out_w + ox) * g.out_c + c] = static_cast<T>(count ? s / count : 0.0);
        }
      }
}

template <class T>
void avg_pool2d_backward(const Window2d& g, const T* dy, T* dx) {
  int64_t n = g.batch * g.in_h * g.in_w * g.in_c;
  std::vector<double> acc(n, 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        int64_t count = window_count(g, oy, ox);
        if (!count) continue;
        for (int64_t ky = 0; ky < g.k_h; ++ky) {
          int64_t iy = source(oy, ky, g.stride_h, g.pad_top, g.in_h);
          if (iy < 0) continue;
          for (int64_t kx = 0; kx < g.k_w; ++kx) {
            int64_t ix = source(ox, kx, g.stride_w, g.pad_left, g.in_w);
            if (ix < 0) continue;
            for (int64_t c = 0; c < g.out_c; ++c)
              acc[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + c] +=
                  static_cast<double>(dy[((b * g.out_h + oy) * g.out_w + ox) * g.out_c + c]) / count;
          }
        }
      }
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<T>(acc[i]);
}

template <class T>
void global_avg_pool(int64_t batch, int64_t pixels, int64_t channels, const T* x, T* y) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      double s = 0;
      for (int64_t p = 0; p < pixels; ++p) s += x[(b * pixels + p) * channels + c];
      y[b * channels + c] = static_cast<T>(s / pixels);
    }
}

template <class T>
void global_avg_pool_backward(int64_t batch, int64_t pixels, int64_t channels, const T* dy, T* dx) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < channels; ++c)
        dx[(b * pixels + p) * channels + c] = static_cast<T>(static_cast<double>(dy[b * channels + c]) / pixels);
}

template <class T>
void global_max_pool(int64_t batch, int64_t pixels, int64_t channels, const T* x, T* y) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      T best = x[b * pixels * channels + c];
      for (int64_t p = 1; p < pixels; ++p)
        best = x[(b * pixels + p) * channels + c] > best ? x[(b * pixels + p) * channels + c] : best;
      y[b * channels + c] = best;
    }
}

template <class T>
void global_max_pool_backward(int64_t batch, int64_t pixels, int64_t channels, const T* x, const T* dy, T* dx) {
  for (int64_t i = 0; i < batch * pixels * channels; ++i) dx[i] = T(0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      int64_t best = b * pixels * channels + c;
      for (int64_t p = 1; p < pixels; ++p)
        if (x[(b * pixels + p) * channels + c] > x[best]) best = (b * pixels + p) * channels + c;
      dx[best] = dy[b * channels + c];
    }
}

template <class T>
void upsample2d(const Window2d& g, bool bilinear, const T* x, T* y) {
  int64_t c = g.in_c;
  if (!bilinear) {
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t oy = 0; oy < g.out_h; ++oy)
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          const T* xp = x + ((b * g.in_h + oy * g.in_h / g.out_h) * g.in_w + ox * g.in_w / g.out_w) * c;
          T* yp = y + ((b * g.out_h + oy) * g.out_w + ox) * c;
          for (int64_t k = 0; k < c; ++k) yp[k] = xp[k];
        }
    return;
  }
  auto ly = lerps(g.in_h, g.out_h), lx = lerps(g.in_w, g.out_w);
  auto at = [&](int64_t b, int64_t iy, int64_t ix, int64_t k) {
    return static_cast<double>(x[((b * g.in_h + iy) * g.in_w + ix) * c + k]);
  };
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t k = 0; k < c; ++k) {
          const Lerp& Y = ly[oy];
          const Lerp& X = lx[ox];
          double top = at(b, Y.lo, X.lo, k) + (at(b, Y.lo, X.hi, k) - at(b, Y.lo, X.lo, k)) * X.w;
          double bottom = at(b, Y.hi, X.lo, k) + (at(b, Y.hi, X.hi, k) - at(b, Y.hi, X.lo, k)) * X.w;
          y[((b * g.out_h + oy) * g.out_w + ox) * c + k] = static_cast<T>(top + (bottom - top) * Y.w);
        }
}

template <class T>
void upsample2d_backward(const Window2d& g, bool bilinear, const T* dy, T* dx) {
  int64_t c = g.in_c;
  int64_t n = g.batch * g.in_h * g.in_w * c;
  std::vector<double> acc(n, 0.0);
  auto idx = [&](int64_t b, int64_t iy, int64_t ix, int64_t k) { return ((b * g.in_h + iy) * g.in_w + ix) * c + k; };
  if (!bilinear) {
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t oy = 0; oy < g.out_h; ++oy)
        for (int64_t ox = 0; ox < g.out_w; ++ox)
          for (int64_t k = 0; k < c; ++k)
            acc[idx(b, oy * g.in_h / g.out_h, ox * g.in_w / g.out_w, k)] +=
                dy[((b * g.out_h + oy) * g.out_w + ox) * c + k];
  } else {
    auto ly = lerps(g.in_h, g.out_h), lx = lerps(g.in_w, g.out_w);
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t oy = 0; oy < g.out_h; ++oy)
        for (int64_t ox = 0; ox < g.out_w; ++ox)
          for (int64_t k = 0; k < c; ++k) {
            const Lerp& Y = ly[oy];
            const Lerp& X = lx[ox];
            double d = dy[((b * g.out_h + oy) * g.out_w + ox) * c + k];
            acc[idx(b, Y.lo, X.lo, k)] += d * (1 - Y.w) * (1 - X.w);
            acc[idx(b, Y.lo, X.hi, k)] += d * (1 - Y.w) * X.w;
            acc[idx(b, Y.hi, X.lo, k)] += d * Y.w * (1 - X.w);
            acc[idx(b, Y.hi, X.hi, k)] += d * Y.w * X.w;
          }
  }
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<T>(acc[i]);
}

#define INSTANTIATE(T)                                                                          \
  template void max_pool2d<T>(const Window2d&, const T*, T*);                                   \
  template void max_pool2d_backward<T>(const Window2d&, const T*, const T*, T*);                \
  template void avg_pool2d<T>(const Window2d&, const T*, T*);                                   \
  template void avg_pool2d_backward<T>(const Window2d&, const T*, T*);                          \
  template void global_avg_pool<T>(int64_t, int64_t, int64_t, const T*, T*);                    \
  template void global_avg_pool_backward<T>(int64_t, int64_t, int64_t, const T*, T*);           \
  template void global_max_pool<T>(int64_t, int64_t, int64_t, const T*, T*);                    \
  template void global_max_pool_backward<T>(int64_t, int64_t, int64_t, const T*, const T*, T*); \
  template void upsample2d<T>(const Window2d&, bool, const T*, T*);                             \
  template void upsample2d_backward<T>(const Window2d&, bool, const T*, T*);
INSTANTIATE(float)
INSTANTIATE(double)
#undef INSTANTIATE

}  // namespace pipec::ref

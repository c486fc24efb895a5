// Convolutions and dense layers of the reference executor: direct loops, double accumulators.
#include <algorithm>
#include <vector>

#include "runtime/train/ref/ref_kernels.h"

namespace pipec::ref {

int64_t pad_before(bool same, int64_t in, int64_t out, int64_t window, int64_t stride) {
  if (!same) return 0;
  int64_t total = std::max<int64_t>((out - 1) * stride + window - in, 0);
  return total / 2;
}

Window2d conv_window(const Conv2dAttrs& a, const Shape& x, const Shape& y, const Shape& kernel, int64_t rows) {
  Window2d w;
  w.batch = rows;
  w.in_h = x[0], w.in_w = x[1], w.in_c = x[2];
  w.out_h = y[0], w.out_w = y[1], w.out_c = y[2];
  w.k_h = kernel[0], w.k_w = kernel[1];
  w.stride_h = a.strides[0], w.stride_w = a.strides[1];
  w.dil_h = a.dilation[0], w.dil_w = a.dilation[1];
  const bool same = a.padding == Padding::Same;
  w.pad_top = pad_before(same, w.in_h, w.out_h, (w.k_h - 1) * w.dil_h + 1, w.stride_h);
  w.pad_left = pad_before(same, w.in_w, w.out_w, (w.k_w - 1) * w.dil_w + 1, w.stride_w);
  return w;
}

Window2d transpose_window(const Conv2dTransposeAttrs& a, const Shape& x, const Shape& y, const Shape& kernel,
                          int64_t rows) {
  Window2d w;
  w.batch = rows;
  w.in_h = y[0], w.in_w = y[1], w.in_c = y[2];
  w.out_h = x[0], w.out_w = x[1], w.out_c = x[2];
  w.k_h = kernel[0], w.k_w = kernel[1];
  w.stride_h = a.strides[0], w.stride_w = a.strides[1];
  const bool same = a.padding == Padding::Same;
  w.pad_top = pad_before(same, w.in_h, w.out_h, w.k_h, w.stride_h);
  w.pad_left = pad_before(same, w.in_w, w.out_w, w.k_w, w.stride_w);
  return w;
}

Window2d pool_window(const Pool2dAttrs* a, const Shape& x, const Shape& y, int64_t rows) {
  Window2d w;
  w.batch = rows;
  w.in_h = x[0], w.in_w = x[1], w.in_c = x[2];
  w.out_h = y[0], w.out_w = y[1], w.out_c = y[2];
  if (a) {
    w.k_h = a->size[0], w.k_w = a->size[1];
    w.stride_h = a->strides[0], w.stride_w = a->strides[1];
    const bool same = a->padding == Padding::Same;
    w.pad_top = pad_before(same, w.in_h, w.out_h, w.k_h, w.stride_h);
    w.pad_left = pad_before(same, w.in_w, w.out_w, w.k_w, w.stride_w);
  }
  return w;
}

namespace {

// The input row/column a window position reads, or -1 when it falls in the padding.
inline int64_t source(int64_t o, int64_t k, int64_t stride, int64_t dil, int64_t pad, int64_t size) {
  int64_t i = o * stride - pad + k * dil;
  return i >= 0 && i < size ? i : -1;
}

}  // namespace

template <class T>
void conv2d(const Window2d& g, const T* x, const T* kernel, const T* bias, T* y) {
  std::vector<double> acc(g.out_c);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t ky = 0; ky < g.k_h; ++ky) {
          int64_t iy = source(oy, ky, g.stride_h, g.dil_h, g.pad_top, g.in_h);
          if (iy < 0) continue;
          for (int64_t kx = 0; kx < g.k_w; ++kx) {
            int64_t ix = source(ox, kx, g.stride_w, g.dil_w, g.pad_left, g.in_w);
            if (ix < 0) continue;
            const T* xp = x + ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
            const T* kp = kernel + (ky * g.k_w + kx) * g.in_c * g.out_c;
            for (int64_t ic = 0; ic < g.in_c; ++ic) {
              double xv = xp[ic];
              const T* kr = kp + ic * g.out_c;
              for (int64_t oc = 0; oc < g.out_c; ++oc) acc[oc] += xv * static_cast<double>(kr[oc]);
            }
          }
        }
        T* yp = y + ((b * g.out_h + oy) * g.out_w + ox) * g.out_c;
        for (int64_t oc = 0; oc < g.out_c; ++oc)
          yp[oc] = static_cast<T>(acc[oc] + (bias ? static_cast<double>(bias[oc]) : 0.0));
      }
}

template <class T>
void conv2d_backward_input(const Window2d& g, const T* dy, const T* kernel, T* dx) {
  std::vector<double> acc(g.in_h * g.in_w * g.in_c);
  for (int64_t b = 0; b < g.batch; ++b) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        const T* dp = dy + ((b * g.out_h + oy) * g.out_w + ox) * g.out_c;
        for (int64_t ky = 0; ky < g.k_h; ++ky) {
          int64_t iy = source(oy, ky, g.stride_h, g.dil_h, g.pad_top, g.in_h);
          if (iy < 0) continue;
          for (int64_t kx = 0; kx < g.k_w; ++kx) {
            int64_t ix = source(ox, kx, g.stride_w, g.dil_w, g.pad_left, g.in_w);
            if (ix < 0) continue;
            const T* kp = kernel + (ky * g.k_w + kx) * g.in_c * g.out_c;
            double* ap = acc.data() + (iy * g.in_w + ix) * g.in_c;
            for (int64_t ic = 0; ic < g.in_c; ++ic) {
              const T* kr = kp + ic * g.out_c;
              double s = 0;
              for (int64_t oc = 0; oc < g.out_c; ++oc) s += static_cast<double>(dp[oc]) * static_cast<double>(kr[oc]);
              ap[ic] += s;
            }
          }
        }
      }
    T* out = dx + b * g.in_h * g.in_w * g.in_c;
    for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<T>(acc[i]);
  }
}

template <class T>
void conv2d_backward_kernel(const Window2d& g, const T* x, const T* dy, T* dkernel) {
  std::vector<double> acc(g.k_h * g.k_w * g.in_c * g.out_c, 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        const T* dp = dy + ((b * g.out_h + oy) * g.out_w + ox) * g.out_c;
        for (int64_t ky = 0; ky < g.k_h; ++ky) {
          int64_t iy = source(oy, ky, g.stride_h, g.dil_h, g.pad_top, g.in_h);
          if (iy < 0) continue;
          for (int64_t kx = 0; kx < g.k_w; ++kx) {
            int64_t ix = source(ox, kx, g.stride_w, g.dil_w, g.pad_left, g.in_w);
            if (ix < 0) continue;
            const T* xp = x + ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
            double* ap = acc.data() + (ky * g.k_w + kx) * g.in_c * g.out_c;
            for (int64_t ic = 0; ic < g.in_c; ++ic) {
              double xv = xp[ic];
              double* ar = ap + ic * g.out_c;
              for (int64_t oc = 0; oc < g.out_c; ++oc) ar[oc] += xv * static_cast<double>(dp[oc]);
            }
          }
        }
      }
  for (size_t i = 0; i < acc.size(); ++i) dkernel[i] = static_cast<T>(acc[i]);
}

template <class T>
void dense(int64_t rows, int64_t in, int64_t out, const T* x, const T* kernel, const T* bias, T* y) {
  std::vector<double> acc(out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) acc[o] = bias ? static_cast<double>(bias[o]) : 0.0;
    const T* xr = x + r * in;
    for (int64_t i = 0; i < in; ++i) {
      double xv = xr[i];
      const T* kr = kernel + i * out;
      for (int64_t o = 0; o < out; ++o) acc[o] += xv * static_cast<double>(kr[o]);
    }
    for (int64_t o = 0; o < out; ++o) y[r * out + o] = static_cast<T>(acc[o]);
  }
}

template <class T>
void dense_backward_input(int64_t rows, int64_t in, int64_t out, const T* dy, const T* kernel, T* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* dr = dy + r * out;
    for (int64_t i = 0; i < in; ++i) {
      const T* kr = kernel + i * out;
      double s = 0;
      for (int64_t o = 0; o < out; ++o) s += static_cast<double>(dr[o]) * static_cast<double>(kr[o]);
      dx[r * in + i] = static_cast<T>(s);
    }
  }
}

template <class T>
void dense_backward_kernel(int64_t rows, int64_t in, int64_t out, const T* x, const T* dy, T* dkernel) {
  std::vector<double> acc(in * out, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * in;
    const T* dr = dy + r * out;
    for (int64_t i = 0; i < in; ++i) {
      double xv = xr[i];
      double* ar = acc.data() + i * out;
      for (int64_t o = 0; o < out; ++o) ar[o] += xv * static_cast<double>(dr[o]);
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) dkernel[i] = static_cast<T>(acc[i]);
}

template <class T>
void bias_backward(int64_t rows, int64_t channels, const T* dy, T* db) {
  std::vector<double> acc(channels, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) acc[c] += dy[r * channels + c];
  for (int64_t c = 0; c < channels; ++c) db[c] = static_cast<T>(acc[c]);
}

template <class T>
void add_bias(int64_t rows, int64_t channels, const T* bias, T* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c)
      y[r * channels + c] = static_cast<T>(static_cast<double>(y[r * channels + c]) + bias[c]);
}

#define INSTANTIATE(T)                                                                       \
  template void conv2d<T>(const Window2d&, const T*, const T*, const T*, T*);                \
  template void conv2d_backward_input<T>(const Window2d&, const T*, const T*, T*);           \
  template void conv2d_backward_kernel<T>(const Window2d&, const T*, const T*, T*);          \
  template void dense<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*);       \
  template void dense_backward_input<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);  \
  template void dense_backward_kernel<T>(int64_t, int64_t, int64_t, const T*, const T*, T*); \
  template void bias_backward<T>(int64_t, int64_t, const T*, T*);                            \
  template void add_bias<T>(int64_t, int64_t, const T*, T*);
INSTANTIATE(float)
INSTANTIATE(double)
#undef INSTANTIATE

}  // namespace pipec::ref

// ---- pools and upsampling ----
// One output element per item (the input gradients: one dx element per item, gathering the windows
// that read it in the reference's order), f64 sums, so each kernel equals runtime/train/ref/ref_pool.cpp
// bit for bit. Padding is neither a maximum nor part of an average (TensorFlow's rules).
#define SK_POOL_GEOMETRY                                                                                 \
  long long batch, long long in_h, long long in_w, long long channels, long long out_h, long long out_w, \
      long long k_h, long long k_w, long long stride_h, long long stride_w, long long pad_top, long long pad_left

// The first maximum of a window (the max pool gradient goes to it): its offset in x, or -1 when the
// window lies in the padding.
PIPEC_DEV long long sk_window_argmax(const float* x, long long b, long long oy, long long ox, long long c,
                                     SK_POOL_GEOMETRY) {
  long long best = -1;
  for (long long ky = 0; ky < k_h; ++ky) {
    const long long iy = oy * stride_h - pad_top + ky;
    if (iy < 0 || iy >= in_h) continue;
    for (long long kx = 0; kx < k_w; ++kx) {
      const long long ix = ox * stride_w - pad_left + kx;
      if (ix < 0 || ix >= in_w) continue;
      const long long at = ((b * in_h + iy) * in_w + ix) * channels + c;
      if (best < 0 || x[at] > x[best]) best = at;
    }
  }
  return best;
}

#define SK_POOL_ARGS batch, in_h, in_w, channels, out_h, out_w, k_h, k_w, stride_h, stride_w, pad_top, pad_left

PIPEC_KERNEL void max_pool2d_forward(long long items, const float* x, float* y, SK_POOL_GEOMETRY) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, out_h, out_w, channels);
    const long long c = idx.c, ox = idx.x, oy = idx.y, b = idx.n;
    const long long at = sk_window_argmax(x, b, oy, ox, c, SK_POOL_ARGS);
    y[i] = at < 0 ? 0.0f : x[at];
  }
}

// dx[at] = the sum of dy over the windows whose first maximum is `at`, in (oy, ox) order.
PIPEC_KERNEL void max_pool2d_backward(long long items, const float* x, const float* dy, float* dx, SK_POOL_GEOMETRY) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, in_h, in_w, channels);
    const long long c = idx.c, ix = idx.x, iy = idx.y, b = idx.n;
    double acc = 0;
    // Windows of rows oy with oy * stride - pad <= iy <= oy * stride - pad + k - 1 (no dilation).
    const long long oy_lo = sk_first_window(iy, pad_top, stride_h, 1, k_h);
    const long long oy_hi = sk_last_window(iy, pad_top, stride_h, out_h);
    const long long ox_lo = sk_first_window(ix, pad_left, stride_w, 1, k_w);
    const long long ox_hi = sk_last_window(ix, pad_left, stride_w, out_w);
    for (long long oy = oy_lo; oy <= oy_hi; ++oy)
      for (long long ox = ox_lo; ox <= ox_hi; ++ox)
        if (sk_window_argmax(x, b, oy, ox, c, SK_POOL_ARGS) == i)
          acc += (double)dy[((b * out_h + oy) * out_w + ox) * channels + c];
    dx[i] = (float)acc;
  }
}

// How many positions of window (oy, ox) fall inside the input (an average's divisor).
PIPEC_DEV long long sk_window_count(long long oy, long long ox, SK_POOL_GEOMETRY) {
  long long n = 0;
  for (long long ky = 0; ky < k_h; ++ky)
    for (long long kx = 0; kx < k_w; ++kx) {
      const long long iy = oy * stride_h - pad_top + ky, ix = ox * stride_w - pad_left + kx;
      if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) ++n;
    }
  return n;
}

PIPEC_KERNEL void avg_pool2d_forward(long long items, const float* x, float* y, SK_POOL_GEOMETRY) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, out_h, out_w, channels);
    const long long c = idx.c, ox = idx.x, oy = idx.y, b = idx.n;
    const long long count = sk_window_count(oy, ox, SK_POOL_ARGS);
    double s = 0;
    for (long long ky = 0; ky < k_h; ++ky) {
      const long long iy = oy * stride_h - pad_top + ky;
      if (iy < 0 || iy >= in_h) continue;
      for (long long kx = 0; kx < k_w; ++kx) {
        const long long ix = ox * stride_w - pad_left + kx;
        if (ix >= 0 && ix < in_w) s += (double)x[((b * in_h + iy) * in_w + ix) * channels + c];
      }
    }
    y[i] = (float)(count ? s / (double)count : 0.0);
  }
}

PIPEC_KERNEL void avg_pool2d_backward(long long items, const float* dy, float* dx, SK_POOL_GEOMETRY) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, in_h, in_w, channels);
    const long long c = idx.c, ix = idx.x, iy = idx.y, b = idx.n;
    double acc = 0;
    const long long oy_lo = sk_first_window(iy, pad_top, stride_h, 1, k_h);
    const long long oy_hi = sk_last_window(iy, pad_top, stride_h, out_h);
    const long long ox_lo = sk_first_window(ix, pad_left, stride_w, 1, k_w);
    const long long ox_hi = sk_last_window(ix, pad_left, stride_w, out_w);
    for (long long oy = oy_lo; oy <= oy_hi; ++oy)
      for (long long ox = ox_lo; ox <= ox_hi; ++ox) {
        const long long count = sk_window_count(oy, ox, SK_POOL_ARGS);
        if (count) acc += (double)dy[((b * out_h + oy) * out_w + ox) * channels + c] / (double)count;
      }
    dx[i] = (float)acc;
  }
}

// Global pools over [batch, pixels, channels]: item (b, c).
PIPEC_KERNEL void global_avg_pool_forward(long long items, const float* x, float* y, long long pixels,
                                          long long channels) {
  SK_FOR_ITEMS(i, items) {
    const long long b = sk_div(i, channels), c = i - b * channels;
    double s = 0;
    for (long long p = 0; p < pixels; ++p) s += (double)x[(b * pixels + p) * channels + c];
    y[i] = (float)(s / (double)pixels);
  }
}

// Item: one dx element.
PIPEC_KERNEL void global_avg_pool_backward(long long items, const float* dy, float* dx, long long pixels,
                                           long long channels) {
  SK_FOR_ITEMS(i, items) {
    const long long q = sk_div(i, channels), c = i - q * channels, b = sk_div(q, pixels);
    dx[i] = (float)((double)dy[b * channels + c] / (double)pixels);
  }
}

PIPEC_KERNEL void global_max_pool_forward(long long items, const float* x, float* y, long long pixels,
                                          long long channels) {
  SK_FOR_ITEMS(i, items) {
    const long long b = sk_div(i, channels), c = i - b * channels;
    float best = x[b * pixels * channels + c];
    for (long long p = 1; p < pixels; ++p) {
      const float v = x[(b * pixels + p) * channels + c];
      best = v > best ? v : best;
    }
    y[i] = best;
  }
}

// Item (b, c): the gradient goes to the first maximum of the column, every other pixel gets 0 (the
// item writes its whole column, so no two items write one element).
PIPEC_KERNEL void global_max_pool_backward(long long items, const float* x, const float* dy, float* dx,
                                           long long pixels, long long channels) {
  SK_FOR_ITEMS(i, items) {
    const long long b = sk_div(i, channels), c = i - b * channels;
    const long long base = b * pixels * channels + c;
    long long best = base;
    for (long long p = 1; p < pixels; ++p)
      if (x[base + p * channels] > x[best]) best = base + p * channels;
    for (long long p = 0; p < pixels; ++p) dx[base + p * channels] = 0.0f;
    dx[best] = dy[i];
  }
}

// Nearest upsampling: output (oy, ox) reads input (oy * in_h / out_h, ox * in_w / out_w).
PIPEC_KERNEL void upsample2d_nearest_forward(long long items, const float* x, float* y, long long in_h, long long in_w,
                                             long long channels, long long out_h, long long out_w) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, out_h, out_w, channels);
    const long long c = idx.c, ox = idx.x, oy = idx.y, b = idx.n;
    y[i] = x[((b * in_h + sk_div(oy * in_h, out_h)) * in_w + sk_div(ox * in_w, out_w)) * channels + c];
  }
}

// The first output index o with o * in / out == i (in <= out or not).
PIPEC_DEV long long sk_first_nearest(long long i, long long in, long long out) { return sk_div(i * out + in - 1, in); }

PIPEC_KERNEL void upsample2d_nearest_backward(long long items, const float* dy, float* dx, long long in_h,
                                              long long in_w, long long channels, long long out_h, long long out_w) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, in_h, in_w, channels);
    const long long c = idx.c, ix = idx.x, iy = idx.y, b = idx.n;
    double acc = 0;
    for (long long oy = sk_first_nearest(iy, in_h, out_h); oy < out_h && sk_div(oy * in_h, out_h) == iy; ++oy)
      for (long long ox = sk_first_nearest(ix, in_w, out_w); ox < out_w && sk_div(ox * in_w, out_w) == ix; ++ox)
        acc += (double)dy[((b * out_h + oy) * out_w + ox) * channels + c];
    dx[i] = (float)acc;
  }
}

// TensorFlow's half-pixel bilinear weights along one axis: output index o reads source indices lo and
// hi with weight w on hi (ref_pool.cpp's lerps()).
struct sk_lerp {
  long long lo, hi;
  double w;
};
PIPEC_DEV sk_lerp sk_lerp_of(long long o, long long in, long long out) {
  const double scale = (double)in / (double)out;
  const double s = ((double)o + 0.5) * scale - 0.5;
  const double f = floor(s);
  sk_lerp l;
  l.lo = sk_max((long long)f, 0);
  l.hi = sk_min((long long)ceil(s), in - 1);
  l.w = s - f;
  return l;
}

PIPEC_KERNEL void upsample2d_bilinear_forward(long long items, const float* x, float* y, long long in_h, long long in_w,
                                              long long channels, long long out_h, long long out_w) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, out_h, out_w, channels);
    const long long c = idx.c, ox = idx.x, oy = idx.y, b = idx.n;
    const sk_lerp Y = sk_lerp_of(oy, in_h, out_h), X = sk_lerp_of(ox, in_w, out_w);
    const float* xb = x + b * in_h * in_w * channels + c;
    const double ll = xb[(Y.lo * in_w + X.lo) * channels], lh = xb[(Y.lo * in_w + X.hi) * channels];
    const double hl = xb[(Y.hi * in_w + X.lo) * channels], hh = xb[(Y.hi * in_w + X.hi) * channels];
    const double top = ll + (lh - ll) * X.w;
    const double bottom = hl + (hh - hl) * X.w;
    y[i] = (float)(top + (bottom - top) * Y.w);
  }
}

// The output indices whose lerp may touch input index i: a range a little wider than the inverse of the
// half-pixel map (the exact test is made per index), running to the edge for the edge indices, which
// the clamping sends the outer outputs to.
PIPEC_DEV long long sk_lerp_first(long long i, long long in, long long out) {
  if (i == 0) return 0;
  const double scale = (double)in / (double)out;
  return sk_max((long long)floor(((double)i - 0.5) / scale - 0.5) - 1, 0);
}
PIPEC_DEV long long sk_lerp_last(long long i, long long in, long long out) {
  if (i == in - 1) return out - 1;
  const double scale = (double)in / (double)out;
  return sk_min((long long)ceil(((double)i + 1.5) / scale - 0.5) + 1, out - 1);
}

// Item: one dx element, gathering what the reference scatters: for each output (oy, ox) in order, its
// four corner terms in the reference's order (lo lo, lo hi, hi lo, hi hi) where they land on this
// element.
PIPEC_KERNEL void upsample2d_bilinear_backward(long long items, const float* dy, float* dx, long long in_h,
                                               long long in_w, long long channels, long long out_h, long long out_w) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, in_h, in_w, channels);
    const long long c = idx.c, ix = idx.x, iy = idx.y, b = idx.n;
    double acc = 0;
    const long long oy_hi = sk_lerp_last(iy, in_h, out_h), ox_lo = sk_lerp_first(ix, in_w, out_w),
                    ox_hi = sk_lerp_last(ix, in_w, out_w);
    for (long long oy = sk_lerp_first(iy, in_h, out_h); oy <= oy_hi; ++oy) {
      const sk_lerp Y = sk_lerp_of(oy, in_h, out_h);
      if (Y.lo != iy && Y.hi != iy) continue;
      for (long long ox = ox_lo; ox <= ox_hi; ++ox) {
        const sk_lerp X = sk_lerp_of(ox, in_w, out_w);
        if (X.lo != ix && X.hi != ix) continue;
        const double d = dy[((b * out_h + oy) * out_w + ox) * channels + c];
        if (Y.lo == iy && X.lo == ix) acc += d * (1 - Y.w) * (1 - X.w);
        if (Y.lo == iy && X.hi == ix) acc += d * (1 - Y.w) * X.w;
        if (Y.hi == iy && X.lo == ix) acc += d * Y.w * (1 - X.w);
        if (Y.hi == iy && X.hi == ix) acc += d * Y.w * X.w;
      }
    }
    dx[i] = (float)acc;
  }
}

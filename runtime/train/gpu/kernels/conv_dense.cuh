// ---- conv2d, conv2d_transpose and dense: direct kernels ----
// The always-available path (cuDNN and cuBLASLt are the fast one) and the one tested on the host. Every
// sum is in f64 from 0 in the reference's order (runtime/train/ref/ref_conv.cpp), one output element per
// item, so the forward and input-gradient kernels equal the reference bit for bit. The kernel gradients
// and bias gradients are sums over every example and pixel: their first kernel sums fixed blocks of
// rows per output element into f64 partials, sum_blocks adds the blocks in order (one block: the
// reference's loop exactly; more: the same f64 sum regrouped, below a float's rounding).
//
// Geometry (ref::Window2d): x [batch, in_h, in_w, in_c], y [batch, out_h, out_w, out_c], kernel HWIO
// [k_h, k_w, in_c, out_c]; the window of output row oy reads input rows oy * stride - pad + ky * dil.
#define SK_CONV_GEOMETRY                                                                                              \
  long long batch, long long in_h, long long in_w, long long in_c, long long out_h, long long out_w, long long out_c, \
      long long k_h, long long k_w, long long stride_h, long long stride_w, long long dil_h, long long dil_w,         \
      long long pad_top, long long pad_left

// y = conv(x, kernel) + bias (bias may be null), then relu when `relu`. Item: one y element.
PIPEC_KERNEL void conv2d_forward(long long items, const float* x, const float* kernel, const float* bias, float* y,
                                 SK_CONV_GEOMETRY, int relu) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, out_h, out_w, out_c);
    const long long oc = idx.c, ox = idx.x, oy = idx.y, b = idx.n;
    double acc = 0;
    for (long long ky = 0; ky < k_h; ++ky) {
      const long long iy = oy * stride_h - pad_top + ky * dil_h;
      if (iy < 0 || iy >= in_h) continue;
      for (long long kx = 0; kx < k_w; ++kx) {
        const long long ix = ox * stride_w - pad_left + kx * dil_w;
        if (ix < 0 || ix >= in_w) continue;
        const float* xp = x + ((b * in_h + iy) * in_w + ix) * in_c;
        const float* kp = kernel + (ky * k_w + kx) * in_c * out_c + oc;
        for (long long ic = 0; ic < in_c; ++ic) acc += (double)xp[ic] * (double)kp[ic * out_c];
      }
    }
    float v = (float)(acc + (bias ? (double)bias[oc] : 0.0));
    if (relu) v = v > 0.0f ? v : 0.0f;
    y[i] = v;
  }
}

// dx = the gradient of conv2d's input from dy (also conv2d_transpose's forward, with its bias added
// after rounding, as the reference adds it: add_bias). Item: one dx element; its windows in (oy, ox)
// order, each one tap, the tap's sum over out_c first, as the reference's loop nest does.
PIPEC_KERNEL void conv2d_backward_input(long long items, const float* dy, const float* kernel, const float* bias,
                                        float* dx, SK_CONV_GEOMETRY, int relu) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, in_h, in_w, in_c);
    const long long ic = idx.c, ix = idx.x, iy = idx.y, b = idx.n;
    double acc = 0;
    const long long oy_hi = sk_last_window(iy, pad_top, stride_h, out_h);
    const long long ox_lo = sk_first_window(ix, pad_left, stride_w, dil_w, k_w);
    const long long ox_hi = sk_last_window(ix, pad_left, stride_w, out_w);
    for (long long oy = sk_first_window(iy, pad_top, stride_h, dil_h, k_h); oy <= oy_hi; ++oy) {
      const long long ty = iy + pad_top - oy * stride_h;
      const long long ky = sk_div(ty, dil_h);
      if (ky * dil_h != ty) continue;
      for (long long ox = ox_lo; ox <= ox_hi; ++ox) {
        const long long tx = ix + pad_left - ox * stride_w;
        const long long kx = sk_div(tx, dil_w);
        if (kx * dil_w != tx) continue;
        const float* dp = dy + ((b * out_h + oy) * out_w + ox) * out_c;
        const float* kr = kernel + ((ky * k_w + kx) * in_c + ic) * out_c;
        double s = 0;
        for (long long oc = 0; oc < out_c; ++oc) s += (double)dp[oc] * (double)kr[oc];
        acc += s;
      }
    }
    float v = (float)acc;
    if (bias) v = (float)((double)v + (double)bias[ic]);
    if (relu) v = v > 0.0f ? v : 0.0f;
    dx[i] = v;
  }
}

// The kernel gradient's partial sums: item (block, ky, kx, ic, oc) sums x * dy over the output
// positions (b, oy, ox) of its block of `block_rows` positions, in order, into partial[block][kernel
// element]. conv2d_transpose's kernel gradient is this with x and dy exchanged (the reference's call).
PIPEC_KERNEL void conv2d_backward_kernel_partial(long long items, const float* x, const float* dy, double* partial,
                                                 SK_CONV_GEOMETRY, long long block_rows) {
  const long long elements = k_h * k_w * in_c * out_c, positions = batch * out_h * out_w;
  SK_FOR_ITEMS(i, items) {
    const long long blk = sk_div(i, elements), e = i - blk * elements;
    const sk_nhwc idx = sk_nhwc_of(e, k_w, in_c, out_c);
    const long long oc = idx.c, ic = idx.x, kx = idx.y, ky = idx.n;
    const long long p_end = sk_min(positions, (blk + 1) * block_rows);
    double acc = 0;
    long long p = blk * block_rows;
    // Position p as (b, oy, ox), stepped along with p.
    const long long q = sk_div(p, out_w), b0 = sk_div(q, out_h);
    long long ox = p - q * out_w, oy = q - b0 * out_h, b = b0;
    for (; p < p_end; ++p) {
      const long long iy = oy * stride_h - pad_top + ky * dil_h;
      const long long ix = ox * stride_w - pad_left + kx * dil_w;
      if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w)
        acc += (double)x[((b * in_h + iy) * in_w + ix) * in_c + ic] * (double)dy[p * out_c + oc];
      if (++ox == out_w) {
        ox = 0;
        if (++oy == out_h) {
          oy = 0;
          ++b;
        }
      }
    }
    partial[i] = acc;
  }
}

// y[r, o] = bias[o] + sum_i x[r, i] kernel[i, o] (the reference starts from the bias), relu when `relu`.
PIPEC_KERNEL void dense_forward(long long items, const float* x, const float* kernel, const float* bias, float* y,
                                long long in, long long out, int relu) {
  SK_FOR_ITEMS(i, items) {
    const long long r = sk_div(i, out), o = i - r * out;
    double acc = bias ? (double)bias[o] : 0.0;
    const float* xr = x + r * in;
    for (long long k = 0; k < in; ++k) acc += (double)xr[k] * (double)kernel[k * out + o];
    float v = (float)acc;
    if (relu) v = v > 0.0f ? v : 0.0f;
    y[i] = v;
  }
}

// dx[r, i] = sum_o dy[r, o] kernel[i, o].
PIPEC_KERNEL void dense_backward_input(long long items, const float* dy, const float* kernel, float* dx, long long in,
                                       long long out) {
  SK_FOR_ITEMS(i, items) {
    const long long r = sk_div(i, in), k = i - r * in;
    const float* dr = dy + r * out;
    const float* kr = kernel + k * out;
    double s = 0;
    for (long long o = 0; o < out; ++o) s += (double)dr[o] * (double)kr[o];
    dx[i] = (float)s;
  }
}

// The kernel gradient's partial sums: item (block, i, o) sums x[r, i] dy[r, o] over its block's rows.
PIPEC_KERNEL void dense_backward_kernel_partial(long long items, const float* x, const float* dy, double* partial,
                                                long long rows, long long in, long long out, long long block_rows) {
  const long long elements = in * out;
  SK_FOR_ITEMS(i, items) {
    const long long blk = sk_div(i, elements), e = i - blk * elements;
    const long long k = sk_div(e, out), o = e - k * out;
    const long long r_end = sk_min(rows, (blk + 1) * block_rows);
    double acc = 0;
    for (long long r = blk * block_rows; r < r_end; ++r) acc += (double)x[r * in + k] * (double)dy[r * out + o];
    partial[i] = acc;
  }
}

// The bias gradient's partial sums: item (block, c) sums dy[r, c] over its block's rows.
PIPEC_KERNEL void bias_backward_partial(long long items, const float* dy, double* partial, long long rows,
                                        long long channels, long long block_rows) {
  SK_FOR_ITEMS(i, items) {
    const long long blk = sk_div(i, channels), c = i - blk * channels;
    const long long r_end = sk_min(rows, (blk + 1) * block_rows);
    double acc = 0;
    for (long long r = blk * block_rows; r < r_end; ++r) acc += (double)dy[r * channels + c];
    partial[i] = acc;
  }
}

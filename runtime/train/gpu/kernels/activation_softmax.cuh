// ---- activations and softmax ----
// runtime/train/ref/ref_activation.cpp's formulas in the same f64 arithmetic: equal to the reference bit
// for bit on the host; on a GPU gelu (erf, exp) and softmax (exp) round CUDA's f64 functions (within 2
// ulp of the double result) to f32, so they differ from the CPU's in the last f32 bit at most.

// y = x > 0 ? x : alpha x (alpha x in f64, as the reference's double alpha makes it).
PIPEC_KERNEL void leaky_relu_forward(long long items, const float* x, float* y, double alpha) {
  SK_FOR_ITEMS(i, items) y[i] = x[i] > 0.0f ? x[i] : (float)(alpha * (double)x[i]);
}

PIPEC_KERNEL void leaky_relu_backward(long long items, const float* x, const float* dy, float* dx, double alpha) {
  SK_FOR_ITEMS(i, items) dx[i] = x[i] > 0.0f ? dy[i] : (float)(alpha * (double)dy[i]);
}

// gelu(x) = x Phi(x), the exact form (erf), not the tanh approximation.
PIPEC_KERNEL void gelu_forward(long long items, const float* x, float* y) {
  SK_FOR_ITEMS(i, items) {
    const double v = x[i];
    y[i] = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
  }
}

PIPEC_KERNEL void gelu_backward(long long items, const float* x, const float* dy, float* dx) {
  SK_FOR_ITEMS(i, items) {
    const double inv_sqrt_2pi = 0.3989422804014327;
    const double v = x[i];
    const double cdf = 0.5 * (1.0 + erf(v / sqrt(2.0)));
    const double pdf = inv_sqrt_2pi * exp(-0.5 * v * v);
    dx[i] = (float)((double)dy[i] * (cdf + v * pdf));
  }
}

// Softmax along an axis of `len` values `inner` apart, repeated `outer` times: item (o, in), one
// softmax each (max, sum of exponentials, then the values, in f64).
PIPEC_KERNEL void softmax_forward(long long items, const float* x, float* y, long long len, long long inner) {
  SK_FOR_ITEMS(i, items) {
    const long long o = sk_div(i, inner), in = i - o * inner;
    const float* xp = x + o * len * inner + in;
    float* yp = y + o * len * inner + in;
    double m = sk_neg_inf();
    for (long long k = 0; k < len; ++k) m = sk_max_f64(m, (double)xp[k * inner]);
    double s = 0;
    for (long long k = 0; k < len; ++k) s += exp((double)xp[k * inner] - m);
    for (long long k = 0; k < len; ++k) yp[k * inner] = (float)(exp((double)xp[k * inner] - m) / s);
  }
}

// dx = y (dy - sum(dy y)) along the axis.
PIPEC_KERNEL void softmax_backward(long long items, const float* y, const float* dy, float* dx, long long len,
                                   long long inner) {
  SK_FOR_ITEMS(i, items) {
    const long long o = sk_div(i, inner), in = i - o * inner;
    const long long base = o * len * inner + in;
    double dot = 0;
    for (long long k = 0; k < len; ++k) dot += (double)dy[base + k * inner] * (double)y[base + k * inner];
    for (long long k = 0; k < len; ++k)
      dx[base + k * inner] = (float)((double)y[base + k * inner] * ((double)dy[base + k * inner] - dot));
  }
}

// out = a b in f32 (dropout's mask applied, and its gradient).
PIPEC_KERNEL void multiply(long long items, const float* a, const float* b, float* out) {
  SK_FOR_ITEMS(i, items) out[i] = a[i] * b[i];
}

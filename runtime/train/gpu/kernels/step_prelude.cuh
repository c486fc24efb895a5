// ---- pipec step kernels: prelude ----
// The training step's kernels are written in a portable subset of CUDA that is also host C++:
//   - NVRTC compiles the whole text (runtime/train/gpu/step_kernel_source.h) for the GPU;
//   - runtime/train/gpu/host_step_kernels.cpp includes the same files as host C++, where each kernel is
//     called once with thread index 0 and thread count 1, so its grid-stride loop covers every item.
// Each kernel is a grid-stride loop over independent work items; each item is computed by one thread in
// a fixed order (no shared memory, no __syncthreads, no atomics), so the results are the same bits on
// any grid, and the host build gives the GPU's bits up to libm against CUDA's transcendental functions.
// Nothing here includes a header: NVRTC compiles the text without any, and the host file includes
// <math.h> and <string.h> before these files.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define PIPEC_KERNEL extern "C" __global__
#define PIPEC_DEV __device__ __forceinline__
#define PIPEC_THREAD_INDEX ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define PIPEC_THREAD_COUNT ((long long)blockDim.x * gridDim.x)
PIPEC_DEV unsigned sk_f32_to_bits(float f) { return __float_as_uint(f); }
PIPEC_DEV float sk_bits_to_f32(unsigned b) { return __uint_as_float(b); }
PIPEC_DEV unsigned long long sk_f64_to_bits(double d) { return (unsigned long long)__double_as_longlong(d); }
PIPEC_DEV double sk_bits_to_f64(unsigned long long b) { return __longlong_as_double((long long)b); }
#else
// The host build: internal linkage (the kernels live in a namespace of host_step_kernels.cpp).
#define PIPEC_KERNEL static
#define PIPEC_DEV static inline
#define PIPEC_THREAD_INDEX 0LL  // on the host one call covers every item
#define PIPEC_THREAD_COUNT 1LL
PIPEC_DEV unsigned sk_f32_to_bits(float f) {
  unsigned b;
  memcpy(&b, &f, 4);
  return b;
}
PIPEC_DEV float sk_bits_to_f32(unsigned b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
PIPEC_DEV unsigned long long sk_f64_to_bits(double d) {
  unsigned long long b;
  memcpy(&b, &d, 8);
  return b;
}
PIPEC_DEV double sk_bits_to_f64(unsigned long long b) {
  double d;
  memcpy(&d, &b, 8);
  return d;
}
#endif

// The grid-stride loop every kernel is: `SK_FOR_ITEMS(i, items) { ... }`.
#define SK_FOR_ITEMS(i, items) for (long long i = PIPEC_THREAD_INDEX; i < (items); i += PIPEC_THREAD_COUNT)

// Finiteness from the exponent bits (no libm: the same test on both builds).
PIPEC_DEV bool sk_finite_f32(float f) { return (sk_f32_to_bits(f) & 0x7f800000u) != 0x7f800000u; }
PIPEC_DEV bool sk_finite_f64(double d) { return (sk_f64_to_bits(d) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }
PIPEC_DEV double sk_neg_inf() { return sk_bits_to_f64(0xfff0000000000000ull); }
PIPEC_DEV double sk_nan() { return sk_bits_to_f64(0x7ff8000000000000ull); }
PIPEC_DEV long long sk_min(long long a, long long b) { return a < b ? a : b; }
PIPEC_DEV long long sk_max(long long a, long long b) { return a > b ? a : b; }
PIPEC_DEV double sk_max_f64(double a, double b) { return a < b ? b : a; }  // std::max's choice on ties/NaN

// Index arithmetic: a / b for a >= 0 and b > 0, in 32 bits when both fit (a GPU divides 64-bit
// integers in software, tens of instructions; the items of a step fit in 32 bits but for the largest).
PIPEC_DEV long long sk_div(long long a, long long b) {
  return ((unsigned long long)(a | b) >> 31) == 0 ? (long long)((unsigned)a / (unsigned)b) : a / b;
}
// Item i of a [n, h, w, c] tensor: its four indices.
struct sk_nhwc {
  long long n, y, x, c;
};
PIPEC_DEV sk_nhwc sk_nhwc_of(long long i, long long h, long long w, long long c) {
  sk_nhwc r;
  const long long q = sk_div(i, c), q2 = sk_div(q, w);
  r.c = i - q * c;
  r.x = q - q2 * w;
  r.n = sk_div(q2, h);
  r.y = q2 - r.n * h;
  return r;
}

// Windows over one axis (convolutions, pools): the first and the last window position o that read input
// index i, with tap t = (i + pad - o * stride) / dil: o in [first, last] where i + pad - o * stride is a
// multiple of dil in [0, (k - 1) * dil].
PIPEC_DEV long long sk_first_window(long long i, long long pad, long long stride, long long dil, long long k) {
  const long long reach = i + pad - (k - 1) * dil;  // o * stride >= reach
  return reach <= 0 ? 0 : sk_div(reach + stride - 1, stride);
}
PIPEC_DEV long long sk_last_window(long long i, long long pad, long long stride, long long out) {
  return sk_min(sk_div(i + pad, stride), out - 1);  // i + pad >= 0
}

// Combines per-block partial sums (written by a reduction's first kernel, [blocks][elements]) in block
// order: out[e] = sum over b of partial[b * elements + e], in f64 from 0, rounded once to f32. With one
// block it is that block's own sum, which is the reference's single loop bit for bit.
PIPEC_KERNEL void sum_blocks(long long items, const double* partial, long long blocks, float* out) {
  SK_FOR_ITEMS(e, items) {
    double s = 0;
    for (long long b = 0; b < blocks; ++b) s += partial[b * items + e];
    out[e] = (float)s;
  }
}

PIPEC_KERNEL void fill(long long items, float* y, float value) { SK_FOR_ITEMS(i, items) y[i] = value; }

PIPEC_KERNEL void copy(long long items, const float* x, float* y) { SK_FOR_ITEMS(i, items) y[i] = x[i]; }

// A layer's fused activation (`activation = relu`) where its kernel has no flag for it: in place, as
// the reference's second loop.
PIPEC_KERNEL void relu_inplace(long long items, float* y) { SK_FOR_ITEMS(i, items) y[i] = y[i] > 0.0f ? y[i] : 0.0f; }

// The bias (and fused relu) of a layer whose product a library computed (cuDNN, cuBLASLt without an
// epilogue): y[r, c] += bias[c], then relu when `relu`. Item: one y element.
PIPEC_KERNEL void bias_add(long long items, float* y, const float* bias, long long channels, int relu) {
  SK_FOR_ITEMS(i, items) {
    const float v = y[i] + bias[i % channels];
    y[i] = relu && !(v > 0.0f) ? 0.0f : v;
  }
}

// ==== pipeline p stage #2 ====
// ---- pipec CUDA prelude ----
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define PIPEC_KERNEL extern "C" __global__
#define PIPEC_DEV __device__ __forceinline__
#define PIPEC_TABLE static __device__ const
#define PIPEC_THREAD_INDEX ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define PIPEC_THREAD_COUNT ((long long)blockDim.x * gridDim.x)
#define PIPEC_F32_BITS(b) __uint_as_float(b)
#define PIPEC_F64_BITS(b) __longlong_as_double((long long)(b))
#else
#include <math.h>
#include <string.h>
#define PIPEC_KERNEL extern "C"
#define PIPEC_DEV static inline
#define PIPEC_TABLE static const
#define PIPEC_THREAD_INDEX 0LL  // on the host one call covers every index
#define PIPEC_THREAD_COUNT 1LL
static inline float pipec_f32_bits(unsigned b) { float f; memcpy(&f, &b, 4); return f; }
static inline double pipec_f64_bits(unsigned long long b) { double d; memcpy(&d, &b, 8); return d; }
#define PIPEC_F32_BITS(b) pipec_f32_bits(b)
#define PIPEC_F64_BITS(b) pipec_f64_bits(b)
#endif
typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef short i16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef float f32;
typedef double f64;

// Integer arithmetic wraps (two's complement), as in the interpreter.
template <class T> PIPEC_DEV T p_add(T a, T b) { return (T)((u64)a + (u64)b); }
template <class T> PIPEC_DEV T p_sub(T a, T b) { return (T)((u64)a - (u64)b); }
template <class T> PIPEC_DEV T p_mul(T a, T b) { return (T)((u64)a * (u64)b); }
template <class T> PIPEC_DEV T p_neg(T a) { return (T)(0 - (u64)a); }
template <class T> PIPEC_DEV T p_max(T a, T b) { return a > b ? a : b; }
template <class T> PIPEC_DEV T p_min(T a, T b) { return a < b ? a : b; }
template <class T> PIPEC_DEV T p_abs(T a) { return a < 0 ? p_neg(a) : a; }
template <class T> PIPEC_DEV T p_relu(T a) { return a < 0 ? (T)0 : a; }
template <class T> PIPEC_DEV T p_square(T a) { return p_mul(a, a); }
template <class T> PIPEC_DEV T p_sign(T a) { return (T)((a > 0) - (a < 0)); }
#define PIPEC_FLOAT_OPS(T, SUF)                                                              \
  PIPEC_DEV T p_add(T a, T b) { return a + b; }                                              \
  PIPEC_DEV T p_sub(T a, T b) { return a - b; }                                              \
  PIPEC_DEV T p_mul(T a, T b) { return a * b; }                                              \
  PIPEC_DEV T p_neg(T a) { return -a; }                                                      \
  PIPEC_DEV T p_max(T a, T b) { return (a > b || a != a) ? a : b; }                          \
  PIPEC_DEV T p_min(T a, T b) { return (a < b || a != a) ? a : b; }                          \
  PIPEC_DEV T p_abs(T a) { return fabs##SUF(a); }                                            \
  PIPEC_DEV T p_relu(T a) { return a < 0 ? (T)0 : a; }                                       \
  PIPEC_DEV T p_square(T a) { return a * a; }                                                \
  PIPEC_DEV T p_sign(T a) { return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; }       \
  PIPEC_DEV T p_div(T a, T b) { return a / b; }                                              \
  PIPEC_DEV T p_tanh(T a) { return tanh##SUF(a); }                                           \
  PIPEC_DEV T p_exp(T a) { return exp##SUF(a); }                                             \
  PIPEC_DEV T p_log(T a) { return log##SUF(a); }                                             \
  PIPEC_DEV T p_log1p(T a) { return log1p##SUF(a); }                                         \
  PIPEC_DEV T p_sqrt(T a) { return sqrt##SUF(a); }                                           \
  PIPEC_DEV T p_rsqrt(T a) { return (T)1 / sqrt##SUF(a); }                                   \
  PIPEC_DEV T p_sin(T a) { return sin##SUF(a); }                                             \
  PIPEC_DEV T p_cos(T a) { return cos##SUF(a); }                                             \
  PIPEC_DEV T p_floor(T a) { return floor##SUF(a); }                                         \
  PIPEC_DEV T p_ceil(T a) { return ceil##SUF(a); }                                           \
  PIPEC_DEV T p_sigmoid(T a) {                                                               \
    if (a >= 0) return (T)1 / ((T)1 + exp##SUF(-a));                                         \
    T e = exp##SUF(a);                                                                       \
    return e / ((T)1 + e);                                                                   \
  }
PIPEC_FLOAT_OPS(f32, f)
PIPEC_FLOAT_OPS(f64, )
#undef PIPEC_FLOAT_OPS

// float -> integer casts saturate and send NaN to 0 (the interpreter's float_to_int); every float
// source is widened to f64 first, which is exact and gives the same answers.
#define PIPEC_F2I(T, LO, HI, MINV, MAXV)                                                    \
  PIPEC_DEV T p_f2i_##T(f64 x) {                                                          \
    if (x != x) return 0;                                                                 \
    if (x >= (HI)) return MAXV;                                                           \
    if (!(x > (LO) - 1.0)) return MINV;                                                   \
    return (T)x;                                                                          \
  }
PIPEC_F2I(u8, 0.0, 256.0, 0, 255)
PIPEC_F2I(i8, -128.0, 128.0, -128, 127)
PIPEC_F2I(u16, 0.0, 65536.0, 0, 65535)
PIPEC_F2I(i16, -32768.0, 32768.0, -32768, 32767)
PIPEC_F2I(u32, 0.0, 4294967296.0, 0u, 4294967295u)
PIPEC_F2I(i32, -2147483648.0, 2147483648.0, (-2147483647 - 1), 2147483647)
PIPEC_F2I(u64, 0.0, 18446744073709551616.0, 0ull, 18446744073709551615ull)
PIPEC_F2I(i64, -9223372036854775808.0, 9223372036854775808.0, (-9223372036854775807ll - 1), 9223372036854775807ll)
#undef PIPEC_F2I

// Philox4x32-10 and the stream of (seed, op, element, epoch): key = philox({op lo, op hi, epoch hi,
// "key1"}, {seed lo, seed hi})[0..1], counter = {element lo, element hi, epoch lo, block}.
PIPEC_DEV void p_philox(u32 c[4], u32 k0, u32 k1) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const u64 p0 = (u64)0xD2511F53u * c[0];
    const u64 p1 = (u64)0xCD9E8D57u * c[2];
    const u32 n0 = (u32)(p1 >> 32) ^ c[1] ^ k0, n1 = (u32)p1, n2 = (u32)(p0 >> 32) ^ c[3] ^ k1, n3 = (u32)p0;
    c[0] = n0;
    c[1] = n1;
    c[2] = n2;
    c[3] = n3;
  }
}
// The 4 words of block `block` of the stream for one element.
PIPEC_DEV void p_stream_block(u64 seed, u64 op, u64 element, u64 epoch, u32 block, u32 out[4]) {
  u32 key[4] = {(u32)op, (u32)(op >> 32), (u32)(epoch >> 32), 0x6b657931u};
  p_philox(key, (u32)seed, (u32)(seed >> 32));
  out[0] = (u32)element;
  out[1] = (u32)(element >> 32);
  out[2] = (u32)epoch;
  out[3] = block;
  p_philox(out, key[0], key[1]);
}
// Value k of uniform_float(): word k of the stream.
PIPEC_DEV f32 p_uniform_f32(u64 seed, u64 op, u64 element, u64 epoch, i64 k) {
  u32 b[4];
  p_stream_block(seed, op, element, epoch, (u32)(k >> 2), b);
  return (f32)(b[k & 3] >> 8) * 5.9604644775390625e-08f;  // 2^-24
}
PIPEC_DEV f64 p_u53(u32 lo, u32 hi) { return (f64)((((u64)hi << 32) | lo) >> 11) * 1.1102230246251565e-16; }  // 2^-53
// Value k of uniform_double(): words 2k and 2k+1.
PIPEC_DEV f64 p_uniform_f64(u64 seed, u64 op, u64 element, u64 epoch, i64 k) {
  u32 b[4];
  p_stream_block(seed, op, element, epoch, (u32)(k >> 1), b);
  const int w = (int)(k & 1) * 2;
  return p_u53(b[w], b[w + 1]);
}
// Value k of normal(): Box-Muller on block k/2 (u1 from words 0-1, u2 from words 2-3); even k takes
// the cosine, odd k the sine (the spare).
PIPEC_DEV f64 p_normal(u64 seed, u64 op, u64 element, u64 epoch, i64 k) {
  u32 b[4];
  p_stream_block(seed, op, element, epoch, (u32)(k >> 1), b);
  const f64 u1 = 1.0 - p_u53(b[0], b[1]);
  const f64 u2 = p_u53(b[2], b[3]);
  const f64 r = sqrt(-2.0 * log(u1));
  const f64 theta = 2.0 * 3.141592653589793 * u2;
  return (k & 1) ? r * sin(theta) : r * cos(theta);
}
// ---- end of prelude ----

// ---- map@2 ----
struct Ctx {
  const i64* in0;  // value
  i64 first_index, epoch;
  u64 seed;
};
PIPEC_TABLE f32 k2[3] = {
  0x1p-1f, -0x1p+0f, 0x1p+1f};
PIPEC_TABLE i64 g6[2] = {2ll, 0ll};
PIPEC_DEV i64 v0(const Ctx& c, i64 row, i64 i) {  // param
  (void)c; (void)row; (void)i;
  return c.in0[row * 1 + i];
}
PIPEC_DEV f32 v1(const Ctx& c, i64 row, i64 i) {  // cast
  (void)c; (void)row; (void)i;
  return ((f32)(v0(c, row, i)));
}
PIPEC_DEV f32 v2(const Ctx& c, i64 row, i64 i) {  // const
  (void)c; (void)row; (void)i;
  return k2[i];
}
PIPEC_DEV f32 v3(const Ctx& c, i64 row, i64 i) {  // mul
  (void)c; (void)row; (void)i;
  return p_mul(v1(c, row, 0), v2(c, row, i));
}
PIPEC_DEV f32 v4(const Ctx& c, i64 row, i64 i) {  // const
  (void)c; (void)row; (void)i;
  return 0x1p+0f;
}
PIPEC_DEV f32 v5(const Ctx& c, i64 row, i64 i) {  // add
  (void)c; (void)row; (void)i;
  return p_add(v3(c, row, i), v4(c, row, 0));
}
PIPEC_DEV f32 v6(const Ctx& c, i64 row, i64 i) {  // gather
  (void)c; (void)row; (void)i;
  return v3(c, row, (g6[i]));
}
PIPEC_DEV f64 v7(const Ctx& c, i64 row, i64 i) {  // const
  (void)c; (void)row; (void)i;
  return -0x1p+0;
}
PIPEC_DEV f64 v8(const Ctx& c, i64 row, i64 i) {  // const
  (void)c; (void)row; (void)i;
  return 0x1p+0;
}
PIPEC_DEV f32 v9(const Ctx& c, i64 row, i64 i) {  // random_uniform
  (void)c; (void)row; (void)i;
  const f32 u = p_uniform_f32((u64)9ll, (u64)0ll, (u64)(c.first_index + row), (u64)c.epoch, i);
  const f32 lo = ((f32)(v7(c, row, 0))), hi = ((f32)(v8(c, row, 0)));
  return (f32)(lo + (hi - lo) * u);
}
PIPEC_KERNEL void pipec_map_2(
    const i64* __restrict__ in0,
    f32* __restrict__ out0,  // scaled
    f32* __restrict__ out1,  // picked
    f32* __restrict__ out2,  // noise
    i64 rows, i64 first_index, i64 epoch, u64 seed) {
  Ctx c;
  c.in0 = in0;
  c.first_index = first_index;
  c.epoch = epoch;
  c.seed = seed;
  const i64 n0 = rows * 3;
  const i64 n1 = rows * 2;
  const i64 n2 = rows * 2;
  const i64 total = n0 + n1 + n2;
  for (i64 t = PIPEC_THREAD_INDEX; t < total; t += PIPEC_THREAD_COUNT) {
    i64 u = t;
    if (u < n0) {
      const i64 row = u / 3, i = u - row * 3;
      out0[u] = v5(c, row, i);
      continue;
    }
    u -= n0;
    if (u < n1) {
      const i64 row = u / 2, i = u - row * 2;
      out1[u] = v6(c, row, i);
      continue;
    }
    u -= n1;
    if (u < n2) {
      const i64 row = u / 2, i = u - row * 2;
      out2[u] = v9(c, row, i);
      continue;
    }
    u -= n2;
  }
}

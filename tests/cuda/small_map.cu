// ==== pipeline p stage #2 ====
// ---- pipec CUDA prelude ----
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define PIPEC_KERNEL extern "C" __global__
#define PIPEC_DEV __device__ __forceinline__
#define PIPEC_DEV_CALL __device__ __noinline__  // big and used often: called, not inlined
#define PIPEC_TABLE static __device__ const
#define PIPEC_THREAD_INDEX ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define PIPEC_THREAD_COUNT ((long long)blockDim.x * gridDim.x)
#define PIPEC_F32_BITS(b) __uint_as_float(b)
#define PIPEC_F64_BITS(b) __longlong_as_double((long long)(b))
#define PIPEC_BITS_OF_F32(f) __float_as_uint(f)
// A float divided by a constant zero is IEEE arithmetic here (an infinity or NaN), as on the CPU.
#pragma nv_diag_suppress 39
// An unsigned value compared with a constant 0 (a spec's `0 <= x` on a u8) means what the spec says.
#pragma nv_diag_suppress 186
#else
#include <math.h>
#include <string.h>
#define PIPEC_KERNEL extern "C"
#define PIPEC_DEV static inline
#define PIPEC_DEV_CALL static inline
#define PIPEC_TABLE static const
#define PIPEC_THREAD_INDEX 0LL  // on the host one call covers every index
#define PIPEC_THREAD_COUNT 1LL
static inline float pipec_f32_bits(unsigned b) { float f; memcpy(&f, &b, 4); return f; }
static inline double pipec_f64_bits(unsigned long long b) { double d; memcpy(&d, &b, 8); return d; }
static inline unsigned pipec_bits_of_f32(float f) { unsigned b; memcpy(&b, &f, 4); return b; }
#define PIPEC_F32_BITS(b) pipec_f32_bits(b)
#define PIPEC_F64_BITS(b) pipec_f64_bits(b)
#define PIPEC_BITS_OF_F32(f) pipec_bits_of_f32(f)
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
template <class T> struct p_signed { static constexpr bool value = (T)(-1) < (T)0; };

// Integers (bool included where the op allows it). Arithmetic wraps: it is done in u64 and truncated.
template <class T> PIPEC_DEV T p_add(T a, T b) { return (T)((u64)a + (u64)b); }
template <class T> PIPEC_DEV T p_sub(T a, T b) { return (T)((u64)a - (u64)b); }
template <class T> PIPEC_DEV T p_mul(T a, T b) { return (T)((u64)a * (u64)b); }
template <class T> PIPEC_DEV T p_neg(T a) { return (T)(0 - (u64)a); }
template <class T> PIPEC_DEV T p_max(T a, T b) { return a > b ? a : b; }
template <class T> PIPEC_DEV T p_min(T a, T b) { return a < b ? a : b; }
template <class T> PIPEC_DEV T p_clip(T x, T lo, T hi) {  // floats too: NaN stays NaN, lo > hi gives hi
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}
template <class T> PIPEC_DEV T p_abs(T a) {  // abs(MIN) = MIN
  if constexpr (p_signed<T>::value) return a < 0 ? p_neg(a) : a;
  else return a;
}
template <class T> PIPEC_DEV T p_sign(T a) {
  if constexpr (p_signed<T>::value) return (T)((a > 0) - (a < 0));
  else return (T)(a > 0);
}
template <class T> PIPEC_DEV T p_relu(T a) {
  if constexpr (p_signed<T>::value) return a < 0 ? (T)0 : a;
  else return a;
}
// Floor division and modulo with Python's signs; x // 0 = x % 0 = 0, MIN // -1 = MIN.
template <class T> PIPEC_DEV T p_floordiv(T a, T b) {
  if (b == 0) return 0;
  if constexpr (p_signed<T>::value) {
    if (b == (T)-1) return p_neg(a);
    T q = (T)(a / b);
    const T r = (T)(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) q = (T)(q - 1);
    return q;
  } else {
    return (T)(a / b);
  }
}
template <class T> PIPEC_DEV T p_mod(T a, T b) {
  if (b == 0) return 0;
  if constexpr (p_signed<T>::value) {
    if (b == (T)-1) return 0;
    T r = (T)(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
    return r;
  } else {
    return (T)(a % b);
  }
}
// Powers by squaring, wrapping; a negative exponent gives the truncated 1 / a^|b|.
template <class T> PIPEC_DEV T p_pow(T a, T b) {
  if constexpr (p_signed<T>::value) {
    if (b < 0) {
      if (a == 1) return 1;
      if (a == (T)-1) return (b & 1) ? (T)-1 : (T)1;
      return 0;
    }
  }
  u64 result = 1, base = (u64)a, e = (u64)b;
  while (e) {
    if (e & 1) result = result * base;
    base = base * base;
    e >>= 1;
  }
  return (T)result;
}
// Shift counts outside [0, bits) shift everything out: shl gives 0, shr 0 or -1 (sign fill).
template <class T> PIPEC_DEV T p_shl(T a, T b) {
  if constexpr (p_signed<T>::value) {
    if (b < 0) return 0;
  }
  if (b >= (T)(sizeof(T) * 8)) return 0;
  return (T)((u64)a << b);
}
template <class T> PIPEC_DEV T p_shr(T a, T b) {
  if constexpr (p_signed<T>::value) {
    if (b < 0 || b >= (T)(sizeof(T) * 8)) return a < 0 ? (T)-1 : (T)0;
    return (T)(a >> b);  // arithmetic
  } else {
    if (b >= (T)(sizeof(T) * 8)) return 0;
    return (T)(a >> b);
  }
}
// One step of reduce_max / reduce_min.
template <class T> PIPEC_DEV T p_fold_max(T acc, T x) { return x > acc ? x : acc; }
template <class T> PIPEC_DEV T p_fold_min(T acc, T x) { return x < acc ? x : acc; }

// Floats: the interpreter's formulas with the float (f32) or double (f64) C functions.
#define PIPEC_FLOAT_OPS(T, SUF)                                                                \
  PIPEC_DEV T p_max(T a, T b) { return (a > b || a != a) ? a : b; }                            \
  PIPEC_DEV T p_min(T a, T b) { return (a < b || a != a) ? a : b; }                            \
  PIPEC_DEV T p_abs(T a) { return fabs##SUF(a); }                                              \
  PIPEC_DEV T p_sign(T a) { return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; }         \
  PIPEC_DEV T p_relu(T a) { return a < 0 ? (T)0 : a; }                                         \
  PIPEC_DEV T p_mod(T a, T b) {                                                                \
    T m = fmod##SUF(a, b);                                                                     \
    if (b == 0) return m;                                                                      \
    if (m != 0) {                                                                              \
      if ((b < 0) != (m < 0)) m += b;                                                          \
    } else {                                                                                   \
      m = copysign##SUF((T)0, b);                                                              \
    }                                                                                          \
    return m;                                                                                  \
  }                                                                                            \
  PIPEC_DEV T p_floordiv(T a, T b) {                                                           \
    if (b == 0) return a / b;                                                                  \
    const T m = fmod##SUF(a, b);                                                               \
    T div = (a - m) / b;                                                                       \
    if (m != 0 && ((b < 0) != (m < 0))) div -= 1;                                              \
    if (div != 0) {                                                                            \
      T fl = floor##SUF(div);                                                                  \
      if (div - fl > (T)0.5) fl += 1;                                                          \
      return fl;                                                                               \
    }                                                                                          \
    return copysign##SUF((T)0, a / b);                                                         \
  }                                                                                            \
  PIPEC_DEV T p_round(T a) { /* half to even; keeps the sign of zero */                        \
    T r = floor##SUF(a);                                                                       \
    const T d = a - r;                                                                         \
    if (d > (T)0.5 || (d == (T)0.5 && fmod##SUF(r, (T)2) != 0)) r += 1;                        \
    if (r == 0) r = copysign##SUF((T)0, a);                                                    \
    return r;                                                                                  \
  }                                                                                            \
  PIPEC_DEV T p_sigmoid(T a) { /* exp never overflows */                                       \
    if (a >= 0) return (T)1 / ((T)1 + exp##SUF(-a));                                           \
    const T e = exp##SUF(a);                                                                   \
    return e / ((T)1 + e);                                                                     \
  }                                                                                            \
  PIPEC_DEV T p_fold_max(T acc, T x) { return acc != acc ? acc : x != x ? x : x > acc ? x : acc; } \
  PIPEC_DEV T p_fold_min(T acc, T x) { return acc != acc ? acc : x != x ? x : x < acc ? x : acc; }
PIPEC_FLOAT_OPS(f32, f)
PIPEC_FLOAT_OPS(f64, )
#undef PIPEC_FLOAT_OPS

// f32 rounded to bf16 or f16 and back (a rounding cast pair, mixed precision's round nodes in an expr):
// runtime/core/half.h's conversions, to nearest even, NaNs kept and made quiet, as the LLVM emitter has
// them (compiler/codegen/llvm/emit_kernel.cpp).
PIPEC_DEV f32 p_round_bf16(f32 x) {
  const u32 b = PIPEC_BITS_OF_F32(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return PIPEC_F32_BITS((b & 0xffff0000u) | 0x00400000u);
  return PIPEC_F32_BITS((b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u);
}
PIPEC_DEV f32 p_round_f16(f32 x) {
  const u32 b = PIPEC_BITS_OF_F32(x), ax = b & 0x7fffffffu, sign = b & 0x80000000u;
  if (ax > 0x7f800000u) return PIPEC_F32_BITS(sign | 0x7fc00000u | (ax & 0x007fe000u));
  if (ax >= 0x477ff000u) return PIPEC_F32_BITS(sign | 0x7f800000u);
  if (ax < 0x38800000u) {  /* f16 subnormals: |x| to a multiple of 2^-24, to nearest even */
    const f32 small = (PIPEC_F32_BITS(ax) + 0.5f) - 0.5f;
    return PIPEC_F32_BITS(PIPEC_BITS_OF_F32(small) | sign);
  }
  return PIPEC_F32_BITS((b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u);
}

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
// One element's stream: the derived key and the counter's fixed words.
struct p_stream {
  u32 k0, k1, e0, e1, ep;
};
PIPEC_DEV p_stream p_stream_of(u64 seed, u64 op, u64 element, u64 epoch) {
  u32 key[4] = {(u32)op, (u32)(op >> 32), (u32)(epoch >> 32), 0x6b657931u};
  p_philox(key, (u32)seed, (u32)(seed >> 32));
  p_stream s = {key[0], key[1], (u32)element, (u32)(element >> 32), (u32)epoch};
  return s;
}
// The 4 words of block `block` of a stream.
PIPEC_DEV void p_block(const p_stream& s, u32 block, u32 out[4]) {
  out[0] = s.e0;
  out[1] = s.e1;
  out[2] = s.ep;
  out[3] = block;
  p_philox(out, s.k0, s.k1);
}
// Value k of uniform_float(): word k of the stream.
PIPEC_DEV_CALL f32 p_uniform_f32(u64 seed, u64 op, u64 element, u64 epoch, i64 k) {
  u32 b[4];
  p_block(p_stream_of(seed, op, element, epoch), (u32)(k >> 2), b);
  return (f32)(b[k & 3] >> 8) * 5.9604644775390625e-08f;  // 2^-24
}
PIPEC_DEV f64 p_u53(u32 lo, u32 hi) { return (f64)((((u64)hi << 32) | lo) >> 11) * 1.1102230246251565e-16; }  // 2^-53
// Value k of uniform_double(): words 2k and 2k+1.
PIPEC_DEV_CALL f64 p_uniform_f64(u64 seed, u64 op, u64 element, u64 epoch, i64 k) {
  u32 b[4];
  p_block(p_stream_of(seed, op, element, epoch), (u32)(k >> 1), b);
  const int w = (int)(k & 1) * 2;
  return p_u53(b[w], b[w + 1]);
}
// Value k of normal(): Box-Muller on block k/2 (u1 from words 0-1, u2 from words 2-3); even k takes
// the cosine, odd k the sine (the spare).
PIPEC_DEV_CALL f64 p_normal(u64 seed, u64 op, u64 element, u64 epoch, i64 k) {
  u32 b[4];
  p_block(p_stream_of(seed, op, element, epoch), (u32)(k >> 1), b);
  const f64 u1 = 1.0 - p_u53(b[0], b[1]);
  const f64 u2 = p_u53(b[2], b[3]);
  const f64 r = sqrt(-2.0 * log(u1));
  const f64 theta = 2.0 * 3.141592653589793 * u2;
  return (k & 1) ? r * sin(theta) : r * cos(theta);
}
// Value k of uniform_int(lo, hi - 1) (lo < hi). The interpreter rejects the draws below 2^w mod n
// (w = 32 for n <= 2^32 values, else 64; a u64 draw is two words) and redraws, so value k is the
// (k+1)-th accepted draw: when nothing can be rejected (n a power of two) it is draw k, otherwise the
// draws before it are scanned, as the interpreter drew them.
PIPEC_DEV_CALL i64 p_random_int(u64 seed, u64 op, u64 element, u64 epoch, i64 k, i64 lo, i64 hi) {
  const p_stream s = p_stream_of(seed, op, element, epoch);
  const u64 n = (u64)hi - (u64)lo;        // values in [lo, hi): 1 .. 2^64 - 1
  const bool wide = n > 0x100000000ull;  // u64 draws (two words) past 2^32 values
  const u64 reject_below = wide ? (0 - n) % n : n == 0x100000000ull ? 0 : (u64)((u32)(0u - (u32)n) % (u32)n);
  const i64 per_block = wide ? 2 : 4;
  u32 b[4];
  i64 block = -1, accepted = 0;
  for (i64 d = reject_below == 0 ? k : 0;; ++d) {
    if (d / per_block != block) {
      block = d / per_block;
      p_block(s, (u32)block, b);
    }
    const int w = (int)(d % per_block) * (wide ? 2 : 1);
    const u64 x = wide ? ((u64)b[w + 1] << 32) | b[w] : (u64)b[w];
    if (x < reject_below) continue;
    if (reject_below == 0 || accepted == k) return (i64)((u64)lo + x % n);
    ++accepted;
  }
}
// ---- end of prelude ----

// ---- map@2 ----
struct Ctx {
  const i64* in0;  // `value`: i64[] per row
  i64 first_index, epoch;
  u64 seed;
};
PIPEC_TABLE f32 table0[3] = {
  0x1p-1f, -0x1p+0f, 0x1p+1f};
PIPEC_TABLE f32 table1[3] = {
  0x1p-1f, -0x1p+0f, 0x1p+1f};
// result 0 `scaled`: f32[3]
PIPEC_DEV f32 result0(const Ctx& c, i64 v0, i64 v1) {
  const i64 n2 = c.in0[v0 * 1 + 0ll];
  const f32 n3 = ((f32)n2);
  const f32 n5 = table0[v1];
  const f32 n6 = (n3 * n5);
  const f32 n8 = (n6 + 0x1p+0f);
  return n8;
}
// result 1 `picked`: f32[2]
PIPEC_DEV f32 result1(const Ctx& c, i64 v0, i64 v1) {
  const i64 n6 = c.in0[v0 * 1 + 0ll];
  const f32 n7 = ((f32)n6);
  const i64 n2 = (v1 * -2ll);
  const i64 n4 = (2ll + n2);
  const f32 n9 = table1[n4];
  const f32 n10 = (n7 * n9);
  return n10;
}
// result 2 `noise`: f32[2]
PIPEC_DEV f32 result2(const Ctx& c, i64 v0, i64 v1) {
  const f32 n5 = ((f32)-0x1p+0);
  const f32 n7 = ((f32)0x1p+0);
  const f32 n8 = (n7 - n5);
  const f32 n3 = p_uniform_f32(9ull, 0ull, (u64)(c.first_index + v0), (u64)c.epoch, v1);
  const f32 n9 = (n8 * n3);
  const f32 n10 = (n5 + n9);
  return n10;
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
  if (total <= 0x7fffffffll) {
    const u32 m0 = (u32)n0;
    const u32 m1 = (u32)n1;
    const u32 m2 = (u32)n2;
    for (u32 t = (u32)PIPEC_THREAD_INDEX; t < (u32)total; t += (u32)PIPEC_THREAD_COUNT) {
      u32 u = t;
      if (u < m0) {
        const u32 v0 = u / 3;
        u32 e = u - v0 * 3;
        const u32 v1 = e;
        out0[u] = result0(c, v0, v1);
        continue;
      }
      u -= m0;
      if (u < m1) {
        const u32 v0 = u / 2;
        u32 e = u - v0 * 2;
        const u32 v1 = e;
        out1[u] = result1(c, v0, v1);
        continue;
      }
      u -= m1;
      if (u < m2) {
        const u32 v0 = u / 2;
        u32 e = u - v0 * 2;
        const u32 v1 = e;
        out2[u] = result2(c, v0, v1);
        continue;
      }
    }
  } else {
    for (i64 t = (i64)PIPEC_THREAD_INDEX; t < (i64)total; t += (i64)PIPEC_THREAD_COUNT) {
      i64 u = t;
      if (u < n0) {
        const i64 v0 = u / 3;
        i64 e = u - v0 * 3;
        const i64 v1 = e;
        out0[u] = result0(c, v0, v1);
        continue;
      }
      u -= n0;
      if (u < n1) {
        const i64 v0 = u / 2;
        i64 e = u - v0 * 2;
        const i64 v1 = e;
        out1[u] = result1(c, v0, v1);
        continue;
      }
      u -= n1;
      if (u < n2) {
        const i64 v0 = u / 2;
        i64 e = u - v0 * 2;
        const i64 v1 = e;
        out2[u] = result2(c, v0, v1);
        continue;
      }
    }
  }
}

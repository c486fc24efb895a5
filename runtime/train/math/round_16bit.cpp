#include "runtime/train/math/round_16bit.h"

#include "runtime/core/half.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace pipec {

void round_to_bf16_scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_bits_to_float(float_to_bf16_bits(x[i]));
}

void round_to_f16_scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = half_bits_to_float(float_to_half_bits(x[i]));
}

#if defined(__x86_64__)
namespace {

// vcvtps2ph rounds as the rounding-control immediate says (nearest even here, not MXCSR's mode), and
// neither it nor vcvtph2ps flushes f16 subnormals.
__attribute__((target("avx,f16c"))) void round_to_f16_f16c(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  round_to_f16_scalar(x + i, y + i, n - i);
}

// float_to_bf16_bits on 8 lanes in integer arithmetic, bit for bit: a NaN keeps its top 16 bits with the
// quiet bit set; anything else adds 0x7fff plus the lowest kept bit (ties to even) and drops the low 16.
// The branchy scalar loop does not vectorize, and a mixed_bf16 step rounds every activation and gradient.
// Returns the rounded floats' bits (the low 16 bits zero); the constants are hoisted out of the callers' loops.
__attribute__((target("avx2"))) inline __m256i round_bf16_lanes(__m256i b) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), infinity = _mm256_set1_epi32(0x7f800000);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u)), quiet = _mm256_set1_epi32(0x00400000);
  const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
  // |x| > infinity as signed integers (both are non-negative): a NaN.
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, abs_mask), infinity);
  const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
  const __m256i rounded = _mm256_and_si256(_mm256_add_epi32(b, _mm256_add_epi32(half, lowest_kept)), high);
  const __m256i quieted = _mm256_or_si256(_mm256_and_si256(b, high), quiet);
  return _mm256_blendv_epi8(rounded, quieted, nan);
}

__attribute__((target("avx2"))) void round_to_bf16_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), round_bf16_lanes(b));
  }
  round_to_bf16_scalar(x + i, y + i, n - i);
}

// round_to_bf16_avx2's lanes, narrowed: the rounded value's top 16 bits, packed 8 to 16 bytes.
__attribute__((target("avx2"))) void round_to_bf16_bits_avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i bits = _mm256_srli_epi32(round_bf16_lanes(b), 16);
    // packus works within each 128-bit half: lanes 0-3 and 4-7 land in 64-bit parts 0 and 2.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) y[i] = float_to_bf16_bits(x[i]);
}
}  // namespace
#endif

void round_to_bf16(const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    round_to_bf16_avx2(x, y, n);
    return;
  }
#endif
  round_to_bf16_scalar(x, y, n);
}

void round_to_bf16_bits(const float* x, uint16_t* y, int64_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    round_to_bf16_bits_avx2(x, y, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = float_to_bf16_bits(x[i]);
}

void round_to_f16(const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  // F16C is CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know it by name).
  static const bool f16c = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
  }();
  if (f16c) {
    round_to_f16_f16c(x, y, n);
    return;
  }
#endif
  round_to_f16_scalar(x, y, n);
}

}  // namespace pipec

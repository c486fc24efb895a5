#include "runtime/train/math/round_16bit.h"

#include "runtime/core/half.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace pipec {

void round_to_bf16(const float* x, float* y, int64_t n) {
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

}  // namespace
#endif

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

// 16-bit floats (IEEE binary16 "f16" and bfloat16 "bf16") as storage types, with conversions that round
// to nearest, ties to even. Kernels compute on them in f32 and round once when they store.
//
// Conversions from f64 (and from 64-bit integers) first round to f32 *to odd* and then to the 16-bit
// format to nearest-even: rounding to odd keeps a sticky bit, so the two steps give the same result as
// one correct rounding (f32 has 24 significand bits, at least 2 more than either 16-bit format).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace pipec {

struct f16_t {
  uint16_t bits = 0;
};
struct bf16_t {
  uint16_t bits = 0;
};

inline uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or NaN (NaN stays NaN: keep the top payload bits, force quiet)
    if (ax == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                                               // below 2^-14: subnormal or zero
    uint32_t exp = ax >> 23;
    if (exp < 102) return static_cast<uint16_t>(sign);  // below 2^-25 (or a tie at it): zero
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14..24
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (ax - (112u << 23)) >> 13;
  uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  return static_cast<uint16_t>(sign | h);
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

/// f64 -> f32 rounding toward zero with the lowest significand bit set when inexact ("round to odd").
inline float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::isinf(f)) return std::copysign(std::numeric_limits<float>::max(), static_cast<float>(d));
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) --bits;  // step back toward zero
  return std::bit_cast<float>(bits | 1u);
}

/// |v| for a 64-bit magnitude as f32, rounded to odd (see above).
inline float u64_to_float_round_odd(uint64_t m) {
  if (m < (1ull << 24)) return static_cast<float>(m);
  int shift = std::bit_width(m) - 24;
  uint64_t kept = m >> shift;
  if (m & ((1ull << shift) - 1)) kept |= 1;
  return std::ldexp(static_cast<float>(kept), shift);
}

}  // namespace pipec

// ---- mixed precision's rounding, and layout transposes ----

// f32 -> bf16 bits, to nearest even; NaN stays a quiet NaN (runtime/core/half.h's float_to_bf16_bits).
PIPEC_DEV unsigned sk_float_to_bf16_bits(float f) {
  unsigned x = sk_f32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  x += 0x7fffu + ((x >> 16) & 1u);
  return x >> 16;
}

// f32 -> f16 bits, to nearest even, overflowing to infinity past 65504 (half.h's float_to_half_bits).
PIPEC_DEV unsigned sk_float_to_half_bits(float f) {
  const unsigned x = sk_f32_to_bits(f);
  const unsigned sign = (x >> 16) & 0x8000u;
  const unsigned ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or NaN (NaN stays NaN: the top payload bits kept, made quiet)
    if (ax == 0x7f800000u) return sign | 0x7c00u;
    return sign | 0x7e00u | ((ax >> 13) & 0x3ffu);
  }
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                        // below 2^-14: subnormal or zero
    const unsigned e = ax >> 23;
    if (e < 102) return sign;  // below 2^-25 (or a tie at it): zero
    const unsigned mant = (ax & 0x7fffffu) | 0x800000u;
    const unsigned shift = 126 - e;  // 14..24
    unsigned h = mant >> shift;
    const unsigned rem = mant & ((1u << shift) - 1);
    const unsigned half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return sign | h;
  }
  unsigned h = (ax - (112u << 23)) >> 13;
  const unsigned rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  return sign | h;
}

PIPEC_DEV float sk_half_bits_to_float(unsigned h) {
  const unsigned sign = (h & 0x8000u) << 16;
  const unsigned exp = (h >> 10) & 0x1fu;
  const unsigned mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = (float)mant * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return sk_bits_to_f32(sign | 0x7f800000u | (mant << 13));
  return sk_bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// The round nodes of mixed precision: x rounded to bf16 / f16 and kept in f32.
PIPEC_KERNEL void round_bf16(long long items, const float* x, float* y) {
  SK_FOR_ITEMS(i, items) y[i] = sk_bits_to_f32(sk_float_to_bf16_bits(x[i]) << 16);
}

PIPEC_KERNEL void round_f16(long long items, const float* x, float* y) {
  SK_FOR_ITEMS(i, items) y[i] = sk_half_bits_to_float(sk_float_to_half_bits(x[i]));
}

// Convolution kernels between Keras' HWIO [kh, kw, in, out] and cuDNN's KRSC [out, kh, kw, in] (the
// same transposes serve their gradients, and conv2d_transpose's HWOI kernels with in and out exchanged).
// Item: one destination element.
PIPEC_KERNEL void hwio_to_krsc(long long items, const float* hwio, float* krsc, long long kh, long long kw,
                               long long in, long long out) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, kh, kw, in);  // [out, kh, kw, in]
    const long long c = idx.c, x = idx.x, y = idx.y, o = idx.n;
    krsc[i] = hwio[((y * kw + x) * in + c) * out + o];
  }
}

PIPEC_KERNEL void krsc_to_hwio(long long items, const float* krsc, float* hwio, long long kh, long long kw,
                               long long in, long long out) {
  SK_FOR_ITEMS(i, items) {
    const sk_nhwc idx = sk_nhwc_of(i, kw, in, out);  // [kh, kw, in, out]
    const long long o = idx.c, c = idx.x, x = idx.y, y = idx.n;
    hwio[i] = krsc[((o * kh + y) * kw + x) * in + c];
  }
}

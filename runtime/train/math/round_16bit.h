// Rounding f32 values to bf16 or f16 and back (to nearest, ties to even; f16 overflows to infinity past
// 65504): the round nodes of mixed precision (compiler/train/passes/mixed_precision.cpp), over whole
// tensors. Bit for bit the scalar conversions of runtime/core/half.h; f16 uses the CPU's F16C
// conversions and bf16 AVX2 integer lanes when the CPU has them (the scalar ones are branchy, and a step
// rounds millions of values).
#pragma once

#include <cstdint>

namespace pipec {

void round_to_bf16(const float* x, float* y, int64_t n);
void round_to_f16(const float* x, float* y, int64_t n);
/// The scalar loops, whatever the CPU (tests compare them with the vector ones).
void round_to_f16_scalar(const float* x, float* y, int64_t n);
void round_to_bf16_scalar(const float* x, float* y, int64_t n);
/// As round_to_bf16, but y holds the bf16 values themselves (float_to_bf16_bits), 2 bytes each: a value
/// the fast executor stores as bf16 (runtime/model/bf16_storage.h).
void round_to_bf16_bits(const float* x, uint16_t* y, int64_t n);

}  // namespace pipec

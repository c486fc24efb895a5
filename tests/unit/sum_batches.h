// Batches for the data-parallel tests (tests/unit/train_data_parallel_test.cpp,
// tests/dist/mpi_data_parallel_check.cpp): `rows` examples of 6 inputs in [-1, 1) and, as the target,
// their sum, drawn from `seed` (the same on every rank and every replica).
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace pipec::testing {

inline void sum_batch(int64_t rows, uint64_t seed, Tensor& x, Tensor& y) {
  x = Tensor::empty(DType::F32, {rows, 6});
  y = Tensor::empty(DType::F32, {rows, 1});
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 6; ++c) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const float v = static_cast<float>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1);
      x.data<float>()[r * 6 + c] = v;
      sum += v;
    }
    y.data<float>()[r] = static_cast<float>(sum);
  }
}

}  // namespace pipec::testing

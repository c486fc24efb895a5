// Starting weights and batches made by a formula both pipec's tests and make_train_fixtures.py compute
// (its formula_values / formula_batch / formula_target): splitmix64 of fnv1a64(key) + the element's
// index, the top 53 bits as a uniform u in [0, 1), in doubles, then rounded to f32. Exact integer
// arithmetic and IEEE operations: both sides get the same floats, so the trajectory fixtures need not
// store a model's weights or its batches.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec::testing {

inline uint64_t formula_fnv1a64(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char b : text) h = (h ^ b) * 0x100000001B3ull;
  return h;
}

inline double formula_uniform(uint64_t key, uint64_t i) {
  uint64_t x = key + i + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x = x ^ (x >> 31);
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}

/// A parameter or state tensor's starting values, by the variable's kind (the name's last part):
/// kernels glorot_uniform-sized, gamma 1 ± 0.2, moving_variance in [0.5, 1.5), the rest ± 0.1.
inline void formula_values(const std::string& name, const Shape& shape, float* out) {
  const uint64_t key = formula_fnv1a64(name);
  const std::string kind = name.substr(name.rfind('/') + 1);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  double limit = 0;
  if (kind == "kernel") {
    int64_t rf = 1;
    for (size_t d = 0; d + 2 < shape.size(); ++d) rf *= shape[d];
    limit = std::sqrt(6.0 / static_cast<double>(rf * shape[shape.size() - 2] + rf * shape.back()));
  }
  for (int64_t i = 0; i < n; ++i) {
    double u = formula_uniform(key, static_cast<uint64_t>(i));
    double v = kind == "kernel"            ? (2.0 * u - 1.0) * limit
               : kind == "gamma"           ? 1.0 + (2.0 * u - 1.0) * 0.2
               : kind == "moving_variance" ? 0.5 + u
                                           : (2.0 * u - 1.0) * 0.1;
    out[i] = static_cast<float>(v);
  }
}

/// Batch `step` of field `field`: uniform in [-1, 1).
inline Tensor formula_batch(const std::string& field, int step, const Shape& shape) {
  Tensor t = Tensor::empty(DType::F32, shape);
  const uint64_t key = formula_fnv1a64("input:" + field + ":" + std::to_string(step));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<float>()[i] = static_cast<float>(2.0 * formula_uniform(key, static_cast<uint64_t>(i)) - 1.0);
  return t;
}

/// The target of batch `step`: class labels floor(u * classes) (i64), or (2u - 1) * 0.9 (f32).
inline Tensor formula_target(int step, const Shape& shape, int classes) {
  Tensor t = Tensor::empty(classes ? DType::I64 : DType::F32, shape);
  const uint64_t key = formula_fnv1a64("target:" + std::to_string(step));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double u = formula_uniform(key, static_cast<uint64_t>(i));
    if (classes) t.data<int64_t>()[i] = static_cast<int64_t>(std::floor(u * classes));
    else t.data<float>()[i] = static_cast<float>((2.0 * u - 1.0) * 0.9);
  }
  return t;
}

}  // namespace pipec::testing

// The generator's own model of Pipe types: a dtype and a shape (-1 for a dimension of unknown size).
// It mirrors the typing rules of docs/language.md closely enough that every spec the generator writes
// type-checks; the harness asserts that with the real checker, so a disagreement shows up at once.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace pipec::difftest {

struct GType {
  DType dtype = DType::I64;
  std::vector<int64_t> shape;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d < 0 ? 1 : d;
    return n;
  }
  bool known() const {
    for (int64_t d : shape)
      if (d < 0) return false;
    return true;
  }
  bool operator==(const GType&) const = default;
};

/// "f32[2, 3]" in spec syntax (dimensions must be known).
std::string type_text(const GType& t);
/// "[2, 3]" as a list literal.
std::string shape_literal(const std::vector<int64_t>& shape);

/// A small deterministic random source with the helpers the generator needs.
class Rng {
 public:
  explicit Rng(uint64_t seed) : eng_(seed) {}
  /// Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(eng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(eng_) < p; }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(eng_); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(range(0, static_cast<int64_t>(v.size()) - 1))];
  }
  uint64_t bits() { return eng_(); }

 private:
  std::mt19937_64 eng_;
};

/// Numeric dtypes a field may have (bf16 cannot be written to .npy, so it only appears inside bodies).
const std::vector<DType>& field_dtypes();
/// Every numeric dtype, bf16 included.
const std::vector<DType>& all_numeric_dtypes();

}  // namespace pipec::difftest

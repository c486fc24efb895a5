// Shared by the kernel tests: deterministic random inputs and the comparison against the f64 oracle.
//
// Tolerance. A kernel computes each output as a sum of `terms` f32 products in an order of its choice
// (blocked, split across threads, fused multiply-adds). For any order, the computed sum differs from
// the exact one by at most gamma(terms) * (sum of |terms|), gamma(n) = n u / (1 - n u), u = 2^-24
// (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 4.2 and eq. 3.4 for
// products: the inputs are exact f32 values, each product adds one more rounding). The f64 oracle's
// own error is ~2^-29 of that and is ignored. So an output passes when
//   |got - exact| <= gamma(terms + 2) * magnitude + tiny,
// which is tight enough that an off-by-one in padding or a transposed kernel fails by orders of magnitude
// (such a bug changes an output by about magnitude / terms).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/unit_train_kernels/naive_reference.h"

namespace pipec::train::test {

constexpr double kUnitRoundoff = 1.0 / (1 << 24);

inline double gamma_bound(int64_t n) { return n * kUnitRoundoff / (1 - n * kUnitRoundoff); }

/// Values uniform in [lo, hi), stored as f32 (what the kernel sees) and as the same values in f64.
struct Data {
  std::vector<float> f;
  naive::Vec d;
  float* data() { return f.data(); }
  const float* data() const { return f.data(); }
  size_t size() const { return f.size(); }
};

inline Data random_data(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist{float(lo), float(hi)};
  Data out;
  out.f.resize(n);
  out.d.resize(n);
  for (size_t i = 0; i < n; ++i) {
    out.f[i] = dist(rng);
    out.d[i] = out.f[i];
  }
  return out;
}

inline Data as_data(const naive::Vec& v) {
  Data out;
  out.d = v;
  out.f.assign(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i) out.d[i] = out.f[i];  // the f32 value is what the kernel sees
  return out;
}

/// Expects every got[i] within gamma(terms + 2) * magnitude[i] (+ extra[i] when given) of want[i].
/// Reports the first few failures with their index.
inline void expect_within_bound(const std::vector<float>& got, const naive::Result& want, const std::string& what,
                                const naive::Vec* extra = nullptr) {
  ASSERT_EQ(got.size(), want.value.size()) << what;
  const double g = gamma_bound(want.terms + 2);
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = g * want.magnitude[i] + 1e-30 + (extra ? (*extra)[i] : 0.0);
    double err = std::abs(double(got[i]) - want.value[i]);
    if (!(err <= tol) && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the f64 loop gives " << want.value[i]
                    << " (error " << err << " > bound " << tol << ")";
  }
}

/// Expects |got - want| <= tol[i] elementwise (tolerances computed by the caller).
inline void expect_within(const std::vector<float>& got, const naive::Vec& want, const naive::Vec& tol,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::abs(double(got[i]) - want[i]);
    if (!(err <= tol[i]) && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the f64 loop gives " << want[i] << " (error "
                    << err << " > " << tol[i] << ")";
  }
}

}  // namespace pipec::train::test

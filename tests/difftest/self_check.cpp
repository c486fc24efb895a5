#include "tests/difftest/self_check.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "tests/difftest/compare_outputs.h"

namespace pipec::difftest {

namespace {

template <class T>
RunOutput one(DType dt, std::vector<T> values) {
  Tensor t = Tensor::empty(dt, {static_cast<int64_t>(values.size())});
  std::memcpy(t.raw(), values.data(), values.size() * sizeof(T));
  RunOutput o;
  o.ok = true;
  o.elements.push_back({{"x", t}});
  return o;
}

}  // namespace

std::string comparator_self_check() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float one_f = 1.0f;
  const float four_ulp = std::nextafter(std::nextafter(std::nextafter(std::nextafter(one_f, 2.f), 2.f), 2.f), 2.f);
  const float five_ulp = std::nextafter(four_ulp, 2.f);
  struct Case {
    const char* what;
    RunOutput a, b;
    Tolerance tol;
    bool differ;
  };
  RunOutput failed;
  failed.error = "boom";
  RunOutput shorter = one<int64_t>(DType::I64, {1, 2});
  RunOutput longer = shorter;
  longer.elements.push_back(shorter.elements[0]);
  Case cases[] = {
      {"one flipped integer bit", one<int64_t>(DType::I64, {1, 2}), one<int64_t>(DType::I64, {1, 3}), Tolerance::Ulp,
       true},
      {"bool", one<uint8_t>(DType::Bool, {0, 1}), one<uint8_t>(DType::Bool, {1, 1}), Tolerance::Ulp, true},
      {"NaN vs NaN", one<float>(DType::F32, {nan}), one<float>(DType::F32, {-nan}), Tolerance::Exact, false},
      {"NaN vs 0", one<float>(DType::F32, {nan}), one<float>(DType::F32, {0.f}), Tolerance::Ulp, true},
      {"+0 vs -0 exact", one<float>(DType::F32, {0.f}), one<float>(DType::F32, {-0.f}), Tolerance::Exact, true},
      {"+0 vs -0 ulp", one<float>(DType::F32, {0.f}), one<float>(DType::F32, {-0.f}), Tolerance::Ulp, false},
      {"1 ulp exact", one<float>(DType::F32, {one_f}), one<float>(DType::F32, {std::nextafter(one_f, 2.f)}),
       Tolerance::Exact, true},
      {"4 ulp within the bound", one<float>(DType::F32, {one_f}), one<float>(DType::F32, {four_ulp}), Tolerance::Ulp,
       false},
      {"5 ulp beyond the bound", one<float>(DType::F32, {one_f}), one<float>(DType::F32, {five_ulp}), Tolerance::Ulp,
       true},
      {"inf vs max", one<float>(DType::F32, {INFINITY}), one<float>(DType::F32, {-INFINITY}), Tolerance::Ulp, true},
      {"dtype", one<int32_t>(DType::I32, {1}), one<uint32_t>(DType::U32, {1}), Tolerance::Ulp, true},
      {"element count", shorter, longer, Tolerance::Ulp, true},
      {"failed run", shorter, failed, Tolerance::Ulp, true},
      {"both failed", failed, failed, Tolerance::Exact, false},
  };
  // Twin fields: a pair that differs is reported, one that agrees (NaN with NaN) is not.
  RunOutput twins = one<float>(DType::F32, {nan});
  twins.elements[0].front().first = std::string("m") + kFoldedSuffix;
  twins.elements[0].emplace_back(std::string("m") + kComputedSuffix, twins.elements[0].front().second);
  if (compare_twins(twins)) return "comparator self-check failed: equal twin fields reported";
  twins.elements[0].back().second = one<float>(DType::F32, {0.f}).elements[0][0].second;
  if (!compare_twins(twins)) return "comparator self-check failed: differing twin fields not reported";
  for (const Case& c : cases) {
    bool differ = compare_outputs(c.a, c.b, c.tol).has_value();
    if (differ != c.differ)
      return std::string("comparator self-check failed: ") + c.what + (c.differ ? " not reported" : " reported");
  }
  return "";
}

}  // namespace pipec::difftest

#include "tests/difftest/compare_outputs.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "runtime/core/half.h"

namespace pipec::difftest {

namespace {

bool is_nan(DType dt, const uint8_t* p) {
  switch (dt) {
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
    }
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0;
    }
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    }
    default: {
      double d;
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    }
  }
}

// Maps a float's bits to an integer that orders like the value, with +0 and -0 both at 0.
int64_t ordered(DType dt, const uint8_t* p) {
  size_t size = dtype_size(dt);
  uint64_t bits = 0;
  std::memcpy(&bits, p, size);
  uint64_t sign = uint64_t{1} << (size * 8 - 1);
  int64_t mag = static_cast<int64_t>(bits & (sign - 1));
  return bits & sign ? -mag : mag;
}

}  // namespace

std::string scalar_text(DType dt, const uint8_t* p) {
  switch (dt) {
    case DType::Bool: return p[0] ? "true" : "false";
    case DType::U8: return std::to_string(p[0]);
    case DType::I8: return std::to_string(static_cast<int8_t>(p[0]));
    case DType::U16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return std::to_string(v);
    }
    case DType::I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return std::to_string(v);
    }
    case DType::U32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return std::to_string(v);
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return std::to_string(v);
    }
    case DType::U64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return std::to_string(v);
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return std::to_string(v);
    }
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return fmt::format("{} (0x{:04x})", half_bits_to_float(v), v);
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return fmt::format("{} (0x{:04x})", bf16_bits_to_float(v), v);
    }
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      uint32_t b;
      std::memcpy(&b, p, 4);
      return fmt::format("{} (0x{:08x})", v, b);
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      uint64_t b;
      std::memcpy(&b, p, 8);
      return fmt::format("{} (0x{:016x})", v, b);
    }
    default: return "?";
  }
}

namespace {

std::string value_text(DType dt, const uint8_t* p) { return scalar_text(dt, p); }

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::optional<Mismatch> compare_tensors(const Tensor& a, const Tensor& b, Tolerance tol) {
  Mismatch m;
  if (a.dtype() != b.dtype()) {
    m.what = fmt::format("dtype {} vs {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
    return m;
  }
  if (a.shape() != b.shape()) {
    m.what = fmt::format("shape {} vs {}", shape_text(a.shape()), shape_text(b.shape()));
    return m;
  }
  DType dt = a.dtype();
  int64_t n = a.num_elements();
  if (dt == DType::Bytes) {
    for (int64_t i = 0; i < n; ++i)
      if (a.str(i) != b.str(i)) {
        m.index = i;
        m.what = fmt::format("\"{}\" vs \"{}\"", a.str(i), b.str(i));
        return m;
      }
    return std::nullopt;
  }
  size_t size = dtype_size(dt);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* pa = a.raw() + i * size;
    const uint8_t* pb = b.raw() + i * size;
    if (std::memcmp(pa, pb, size) == 0) continue;
    if (is_float(dt)) {
      if (is_nan(dt, pa) && is_nan(dt, pb)) continue;
      if (tol == Tolerance::Ulp) {
        int64_t bound = dt == DType::F16 || dt == DType::BF16 ? kUlpBoundF16 : kUlpBoundF32;
        if (!is_nan(dt, pa) && !is_nan(dt, pb) && ulp_distance(dt, pa, pb) <= bound) continue;
      }
    }
    m.index = i;
    m.what = fmt::format("{} vs {}", value_text(dt, pa), value_text(dt, pb));
    if (is_float(dt) && !is_nan(dt, pa) && !is_nan(dt, pb))
      m.what += fmt::format(" ({} ulp)", ulp_distance(dt, pa, pb));
    return m;
  }
  return std::nullopt;
}

}  // namespace

int64_t ulp_distance(DType dt, const uint8_t* a, const uint8_t* b) {
  if (is_nan(dt, a) && is_nan(dt, b)) return 0;
  int64_t x = ordered(dt, a), y = ordered(dt, b);
  // Both fit in 63 bits of magnitude, so the difference of two f64 keys may overflow only at the
  // extremes; saturate there.
  if ((x > 0 && y < 0 && x > std::numeric_limits<int64_t>::max() + y) ||
      (x < 0 && y > 0 && y > std::numeric_limits<int64_t>::max() + x))
    return std::numeric_limits<int64_t>::max();
  return x > y ? x - y : y - x;
}

std::optional<Mismatch> compare_outputs(const RunOutput& ref, const RunOutput& got, Tolerance tol) {
  Mismatch m;
  if (ref.ok != got.ok) {
    m.what =
        ref.ok ? "the variant failed: " + got.error : "the reference failed (" + ref.error + ") but the variant ran";
    return m;
  }
  if (!ref.ok) return std::nullopt;  // both failed: agreeing on an error is agreement
  size_t n = std::min(ref.elements.size(), got.elements.size());
  for (size_t e = 0; e < n; ++e) {
    const Element& a = ref.elements[e];
    const Element& b = got.elements[e];
    m.element = static_cast<int64_t>(e);
    if (a.size() != b.size()) {
      m.what = fmt::format("{} fields vs {}", a.size(), b.size());
      return m;
    }
    for (size_t f = 0; f < a.size(); ++f) {
      m.field = a[f].first;
      if (a[f].first != b[f].first) {
        m.what = fmt::format("field `{}` vs `{}`", a[f].first, b[f].first);
        return m;
      }
      if (auto d = compare_tensors(a[f].second, b[f].second, tol)) {
        d->element = m.element;
        d->field = m.field;
        return d;
      }
    }
  }
  if (ref.elements.size() != got.elements.size()) {
    m.element = static_cast<int64_t>(n);
    m.field.clear();
    m.what = fmt::format("{} elements vs {}", ref.elements.size(), got.elements.size());
    return m;
  }
  return std::nullopt;
}

std::optional<Mismatch> compare_twins(const RunOutput& out) {
  if (!out.ok) return std::nullopt;
  const std::string folded = kFoldedSuffix, computed = kComputedSuffix;
  for (size_t e = 0; e < out.elements.size(); ++e) {
    const Element& fields = out.elements[e];
    for (const auto& [name, value] : fields) {
      if (name.size() <= folded.size() || name.compare(name.size() - folded.size(), folded.size(), folded) != 0)
        continue;
      const std::string base = name.substr(0, name.size() - folded.size());
      for (const auto& [other, twin] : fields) {
        if (other != base + computed) continue;
        if (auto d = compare_tensors(value, twin, Tolerance::Exact)) {
          d->element = static_cast<int64_t>(e);
          d->field = base;
          d->what = "folded " + d->what + " computed";
          return d;
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace pipec::difftest

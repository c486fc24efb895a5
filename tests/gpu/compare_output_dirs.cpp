#include "tests/gpu/compare_output_dirs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <ostream>

#include <fmt/format.h>

#include "runtime/io/npy.h"
#include "tests/difftest/compare_outputs.h"

namespace pipec::gputest {

namespace fs = std::filesystem;

namespace {

using Element = std::map<std::string, Tensor>;

std::vector<Element> read_dir(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + " is not a folder");
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory()) folders.push_back(entry.path());
  std::sort(folders.begin(), folders.end());
  std::vector<Element> out;
  for (const fs::path& f : folders) {
    Element e;
    for (const auto& file : fs::directory_iterator(f))
      if (file.path().extension() == ".npy") e[file.path().stem().string()] = read_npy(file.path().string());
    out.push_back(std::move(e));
  }
  return out;
}

bool is_nan(DType dt, const uint8_t* p) {
  switch (dt) {
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      return std::isnan(v);
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      return std::isnan(v);
    }
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return (v & 0x7c00) == 0x7c00 && (v & 0x03ff);
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return (v & 0x7f80) == 0x7f80 && (v & 0x007f);
    }
    default: return false;
  }
}

// Compares one field of one element into `c`; returns false (with `error`) when dtype or shape differ.
bool compare_field(const Tensor& a, const Tensor& b, int64_t element, FieldComparison& c, std::string& error) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    error = fmt::format("element {} field `{}`: {} {} vs {} {}", element, c.field, dtype_name(a.dtype()),
                        fmt::join(a.shape(), "x"), dtype_name(b.dtype()), fmt::join(b.shape(), "x"));
    return false;
  }
  const DType dt = a.dtype();
  const int64_t n = a.num_elements();
  c.values += n;
  if (dt == DType::Bytes) {
    for (int64_t i = 0; i < n; ++i)
      if (a.str(i) != b.str(i)) {
        ++c.differing;
        if (c.first.empty()) c.first = fmt::format("element {} index {}: byte strings differ", element, i);
      }
    return true;
  }
  const size_t size = dtype_size(dt);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* pa = a.raw() + i * size;
    const uint8_t* pb = b.raw() + i * size;
    if (std::memcmp(pa, pb, size) == 0) continue;
    if (is_float(dt)) {
      if (is_nan(dt, pa) && is_nan(dt, pb)) continue;
      int64_t ulp = is_nan(dt, pa) || is_nan(dt, pb) ? INT64_MAX : difftest::ulp_distance(dt, pa, pb);
      if (ulp == 0) continue;  // +0 vs -0
      ++c.differing;
      c.max_ulp = std::max(c.max_ulp, ulp);
      if (ulp > c.bound && c.first.empty())
        c.first = fmt::format("element {} index {}: {} vs {}", element, i, difftest::scalar_text(dt, pa),
                              difftest::scalar_text(dt, pb));
    } else {
      ++c.differing;
      if (c.first.empty())
        c.first = fmt::format("element {} index {}: {} vs {}", element, i, difftest::scalar_text(dt, pa),
                              difftest::scalar_text(dt, pb));
    }
  }
  return true;
}

}  // namespace

bool DirComparison::ok() const {
  if (!error.empty() || elements == 0) return false;
  for (const FieldComparison& f : fields)
    if (!f.ok()) return false;
  return true;
}

void DirComparison::print(std::ostream& os) const {
  for (const FieldComparison& f : fields) {
    os << fmt::format("  {:<16} {:<5} {:>12} values  {:>10} differ  max {} ulp (bound {})  {}{}\n", f.field, f.dtype,
                      f.values, f.differing, f.max_ulp, f.bound, f.ok() ? "ok" : "OVER: ", f.first);
  }
  if (ok()) os << fmt::format("  same within the bounds ({} elements)\n", elements);
  else if (!error.empty()) os << "  DIFFERENT: " << error << "\n";
  else if (elements == 0) os << "  DIFFERENT: no elements to compare\n";
  else os << "  DIFFERENT: values over the bounds\n";
}

DirComparison compare_output_dirs(const fs::path& reference, const fs::path& other) {
  DirComparison r;
  std::vector<Element> a, b;
  try {
    a = read_dir(reference);
    b = read_dir(other);
  } catch (const std::exception& e) {
    r.error = e.what();
    return r;
  }
  if (a.size() != b.size()) {
    r.error = fmt::format("{} elements vs {}", a.size(), b.size());
    return r;
  }
  std::map<std::string, FieldComparison> fields;
  for (size_t k = 0; k < a.size(); ++k) {
    std::vector<std::string> names_a, names_b;
    for (const auto& [name, t] : a[k]) names_a.push_back(name);
    for (const auto& [name, t] : b[k]) names_b.push_back(name);
    if (names_a != names_b) {
      r.error = fmt::format("element {}: fields {} vs {}", k, fmt::join(names_a, ","), fmt::join(names_b, ","));
      return r;
    }
    for (const auto& [name, t] : a[k]) {
      FieldComparison& c = fields[name];
      if (c.field.empty()) {
        c.field = name;
        c.dtype = std::string(dtype_name(t.dtype()));
        c.bound = !is_float(t.dtype())                                  ? 0
                  : t.dtype() == DType::F16 || t.dtype() == DType::BF16 ? difftest::kUlpBoundF16
                                                                        : difftest::kUlpBoundF32;
      }
      if (!compare_field(t, b[k].at(name), static_cast<int64_t>(k), c, r.error)) return r;
    }
  }
  r.elements = static_cast<int64_t>(a.size());
  for (auto& [name, c] : fields) r.fields.push_back(std::move(c));
  return r;
}

}  // namespace pipec::gputest

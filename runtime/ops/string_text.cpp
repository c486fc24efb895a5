#include "runtime/ops/string_text.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

namespace pipec {

namespace {

// The string as an error message shows it: quoted, escaped, cut after 64 bytes.
std::string quoted(std::string_view s) {
  constexpr size_t kShown = 64;
  std::string q = "\"";
  for (size_t i = 0; i < s.size() && i < kShown; ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    if (ch == '"' || ch == '\\') q += std::string("\\") + static_cast<char>(ch);
    else if (ch == '\n') q += "\\n";
    else if (ch == '\t') q += "\\t";
    else if (ch == '\r') q += "\\r";
    else if (ch < 0x20 || ch >= 0x7f) q += fmt::format("\\x{:02x}", ch);
    else q += static_cast<char>(ch);
  }
  q += "\"";
  if (s.size() > kShown) q += fmt::format(" (the first {} of {} bytes)", kShown, s.size());
  return q;
}

// An integer as TensorFlow reads one: whitespace around it, an optional sign, decimal digits only;
// a value outside T's range is an error ("2147483648" as i32), never a wrapped one.
template <class T>
bool parse_int(std::string_view s, T& out, bool& too_big) {
  s = trim_ascii_space(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  // Accumulated as a negative number: T's minimum has no positive counterpart.
  const int64_t lowest = negative ? static_cast<int64_t>(std::numeric_limits<T>::min())
                                  : -static_cast<int64_t>(std::numeric_limits<T>::max());
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') {
      too_big = false;  // not a number at all
      return false;
    }
    const int d = c - '0';
    if (v < (lowest + d) / 10) too_big = true;
    if (!too_big) v = v * 10 - d;
  }
  if (too_big) return false;
  out = static_cast<T>(negative ? v : -v);
  return true;
}

// A float as TensorFlow reads one: whitespace around it, then all of what strtod/strtof accept
// (decimal with exponents, hexadecimal "0x1.8p3", inf, infinity and nan in any case, nan(...)). A
// value beyond T's range is ±inf and one below its smallest is 0, not an error.
template <class T>
bool parse_float(std::string_view s, T& out) {
  const std::string t(trim_ascii_space(s));  // strtod needs the terminating NUL; an inner NUL fails the length check
  if (t.empty()) return false;
  char* end = nullptr;
  if constexpr (std::is_same_v<T, float>) out = std::strtof(t.c_str(), &end);
  else out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

}  // namespace

std::optional<std::string> parse_number(std::string_view text, DType dt, void* out) {
  bool ok = false, too_big = false;
  switch (dt) {
    case DType::F32: {
      float v = 0;
      ok = parse_float(text, v);
      std::memcpy(out, &v, sizeof v);
      break;
    }
    case DType::F64: {
      double v = 0;
      ok = parse_float(text, v);
      std::memcpy(out, &v, sizeof v);
      break;
    }
    case DType::I32: {
      int32_t v = 0;
      ok = parse_int(text, v, too_big);
      std::memcpy(out, &v, sizeof v);
      break;
    }
    case DType::I64: {
      int64_t v = 0;
      ok = parse_int(text, v, too_big);
      std::memcpy(out, &v, sizeof v);
      break;
    }
    default: return fmt::format("to_number makes f32, f64, i32 or i64, not {}", dtype_name(dt));
  }
  if (ok) return std::nullopt;
  if (too_big) return fmt::format("{} is outside the range of {}", quoted(text), dtype_name(dt));
  return fmt::format("{} is not a number of type {}", quoted(text), dtype_name(dt));
}

}  // namespace pipec

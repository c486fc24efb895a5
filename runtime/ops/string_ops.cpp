// Byte-string kernels with tf.strings' semantics (TensorFlow 2.21; the strings_* conformance fixtures
// pin them): strip, split and to_number. They are PerRow: the interpreter calls them once per element
// with that element's tensor (split's result has a length that depends on the data).
//
// "Whitespace" is ASCII's six characters (space, \t, \n, \v, \f, \r), as in TensorFlow; bytes >= 0x80
// (a UTF-8 no-break space) are never whitespace.
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_ascii_space(s[b])) ++b;
  while (e > b && is_ascii_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

const Tensor& bytes_operand(const KernelArgs& a, const char* op) {
  const Tensor& x = a.in.at(0);
  if (x.dtype() != DType::Bytes) throw OpError(fmt::format("{} needs byte strings, not {}", op, dtype_name(x.dtype())));
  return x;
}

// A Bytes tensor of `shape` from its strings.
Tensor bytes_tensor(const std::vector<std::string_view>& pieces, Shape shape) {
  std::string blob;
  std::vector<int64_t> offsets{0};
  offsets.reserve(pieces.size() + 1);
  for (std::string_view p : pieces) {
    blob.append(p);
    offsets.push_back(static_cast<int64_t>(blob.size()));
  }
  Tensor out = Tensor::empty(DType::Bytes, std::move(shape));
  out.set_strings(std::move(blob), std::move(offsets));
  return out;
}

// strip(s): every string of s without its leading and trailing whitespace (tf.strings.strip).
Tensor strip_kernel(const KernelArgs& a) {
  const Tensor& x = bytes_operand(a, "strip");
  std::vector<std::string_view> out;
  out.reserve(static_cast<size_t>(x.num_elements()));
  for (int64_t i = 0; i < x.num_elements(); ++i) out.push_back(trim(x.str(i)));
  return bytes_tensor(out, x.shape());
}

// split(s, sep): the pieces of one string (tf.strings.split on a scalar). With a separator, every
// occurrence (left to right, not overlapping) ends a piece and empty pieces are kept: "a,,b" is
// ["a", "", "b"], "" is [""]. Without one (or with ""), runs of whitespace separate the pieces and
// there are no empty ones: " a  b " is ["a", "b"], "" and "  " are [].
Tensor split_kernel(const KernelArgs& a) {
  const Tensor& x = bytes_operand(a, "split");
  if (x.num_elements() != 1)
    throw OpError(fmt::format("split takes one string, not {} of them", shape_to_string(x.shape())));
  const std::string_view s = x.str(0);
  const Value* sep_attr = find_attr(a.instr, "sep");
  const std::string sep = sep_attr ? sep_attr->s : std::string();
  std::vector<std::string_view> pieces;
  if (sep.empty()) {
    for (size_t i = 0; i < s.size();) {
      while (i < s.size() && is_ascii_space(s[i])) ++i;
      const size_t b = i;
      while (i < s.size() && !is_ascii_space(s[i])) ++i;
      if (i > b) pieces.push_back(s.substr(b, i - b));
    }
  } else {
    size_t b = 0;
    for (size_t at; (at = s.find(sep, b)) != std::string_view::npos; b = at + sep.size())
      pieces.push_back(s.substr(b, at - b));
    pieces.push_back(s.substr(b));
  }
  const auto n = static_cast<int64_t>(pieces.size());
  return bytes_tensor(pieces, {n});
}

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

// "string [1, 0] " for an element of a tensor, "" for the one string of a scalar.
std::string position(const Shape& shape, int64_t k) {
  if (shape.empty()) return "";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? k % shape[d] : 0;
    k = shape[d] ? k / shape[d] : 0;
  }
  return fmt::format("string [{}] ", fmt::join(idx, ", "));
}

// An integer as TensorFlow reads one: whitespace around it, an optional sign, decimal digits only;
// a value outside T's range is an error ("2147483648" as i32), never a wrapped one.
template <class T>
bool parse_int(std::string_view s, T& out, bool& too_big) {
  s = trim(s);
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
  const std::string t(trim(s));  // strtod needs the terminating NUL; an inner NUL fails the length check
  if (t.empty()) return false;
  char* end = nullptr;
  if constexpr (std::is_same_v<T, float>) out = std::strtof(t.c_str(), &end);
  else out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

// to_number(s, dtype): each string as a number of the result's dtype (tf.strings.to_number).
Tensor to_number_kernel(const KernelArgs& a) {
  const Tensor& x = bytes_operand(a, "to_number");
  const DType dt = a.out_dtype();
  Tensor out = Tensor::empty(dt, x.shape());
  for (int64_t k = 0; k < x.num_elements(); ++k) {
    const std::string_view s = x.str(k);
    bool ok = false, too_big = false;
    switch (dt) {
      case DType::F32: ok = parse_float(s, out.data<float>()[k]); break;
      case DType::F64: ok = parse_float(s, out.data<double>()[k]); break;
      case DType::I32: ok = parse_int(s, out.data<int32_t>()[k], too_big); break;
      case DType::I64: ok = parse_int(s, out.data<int64_t>()[k], too_big); break;
      default: throw OpError(fmt::format("to_number makes f32, f64, i32 or i64, not {}", dtype_name(dt)));
    }
    if (ok) continue;
    if (too_big)
      throw OpError(fmt::format("{}{} is outside the range of {}", position(x.shape(), k), quoted(s), dtype_name(dt)));
    throw OpError(fmt::format("{}{} is not a number of type {}", position(x.shape(), k), quoted(s), dtype_name(dt)));
  }
  return out;
}

}  // namespace

void register_string_ops(KernelTable& t) {
  t.set(OpKind::Strip, strip_kernel);
  t.set(OpKind::Split, split_kernel);
  t.set(OpKind::ToNumber, to_number_kernel);
}

}  // namespace pipec

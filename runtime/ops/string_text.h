// Text as tf.strings reads it: its whitespace (strip, split) and its numbers (to_number; the checker
// reads constant strings with the same function, so text known at compile time to be no number is
// reported there).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/core/dtype.h"

namespace pipec {

/// ASCII's six whitespace characters (space, \t, \n, \v, \f, \r), as TensorFlow's; bytes >= 0x80 (a
/// UTF-8 no-break space) are never whitespace.
inline bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/// `s` without its leading and trailing whitespace.
inline std::string_view trim_ascii_space(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_ascii_space(s[b])) ++b;
  while (e > b && is_ascii_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

/// Reads `text` as a number of `dt` (f32, f64, i32 or i64) into `out` (dtype_size(dt) bytes). Returns
/// nullopt, or why it is not one: "\"1e3\" is not a number of type i64", "\"2147483648\" is outside
/// the range of i32" (the text quoted, escaped and cut after 64 bytes).
std::optional<std::string> parse_number(std::string_view text, DType dt, void* out);

}  // namespace pipec

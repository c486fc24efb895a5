// Protocol-buffer wire encoding written by hand for the tf.Example parser's tests: independent of
// ExampleWriter, so the tests can build records the writer never makes (other field orders, unpacked
// lists, damaged bytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pipec::testing {

inline std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}

inline std::string tag(uint32_t number, uint32_t wire_type) { return varint(number << 3 | wire_type); }

/// A length-delimited field (wire type 2).
inline std::string field(uint32_t number, std::string_view payload) {
  return tag(number, 2) + varint(payload.size()) + std::string(payload);
}

}  // namespace pipec::testing

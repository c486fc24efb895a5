// Just enough of the protocol buffers wire format to read and write tf.train.Example (and TensorBoard's
// Event, runtime/io/tf_event.h) by hand.
//
// A message is a sequence of (tag, value) pairs; tag = field_number << 3 | wire_type, and the wire
// type says how to find the value's end (varint, 8 bytes, a varint length + bytes, or 4 bytes).
// That is what lets a parser skip fields it does not want without decoding them.
//
// WireReader throws WireError on malformed input (a varint or length running past the end, an
// over-long varint, field number 0, an unknown or group wire type); the caller turns it into a
// DataError with the record's context. Every read is bounds-checked: no input can make it read
// outside the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/core/le_codec.h"

namespace pipec::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

/// Thrown by WireReader. `at` points at the offending byte inside the message being read.
struct WireError {
  const char* what;
  const char* at;
};

class WireReader {
 public:
  explicit WireReader(std::string_view msg) : p_(msg.data()), end_(msg.data() + msg.size()) {}

  bool done() const { return p_ == end_; }
  const char* pos() const { return p_; }

  uint64_t varint() {
    // Most varints in an Example (tags, short lengths, small ints) are one byte.
    if (p_ != end_ && static_cast<uint8_t>(*p_) < 0x80) return static_cast<uint8_t>(*p_++);
    return varint_slow();
  }

  /// Reads a tag; returns the field number and sets `wire_type`.
  uint32_t tag(uint32_t& wire_type) {
    const char* at = p_;
    uint64_t t = varint();
    wire_type = static_cast<uint32_t>(t & 7);
    uint64_t field = t >> 3;
    if (field == 0) throw WireError{"field number 0", at};
    if (field > 0x1fffffff) throw WireError{"field number out of range", at};
    return static_cast<uint32_t>(field);
  }

  /// A length-delimited value.
  std::string_view bytes() {
    const char* at = p_;
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) throw WireError{"length runs past the end of the message", at};
    std::string_view v(p_, static_cast<size_t>(n));
    p_ += n;
    return v;
  }

  uint32_t fixed32() {
    if (end_ - p_ < 4) throw WireError{"fixed32 runs past the end of the message", p_};
    uint32_t v = load_le32(p_);
    p_ += 4;
    return v;
  }

  uint64_t fixed64() {
    if (end_ - p_ < 8) throw WireError{"fixed64 runs past the end of the message", p_};
    uint64_t v = load_le64(p_);
    p_ += 8;
    return v;
  }

  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: (void)varint(); return;
      case kFixed64: (void)fixed64(); return;
      case kLengthDelimited: (void)bytes(); return;
      case kFixed32: (void)fixed32(); return;
      case kStartGroup:
      case kEndGroup: throw WireError{"groups (wire types 3 and 4) are not supported", p_};
      default: throw WireError{"invalid wire type", p_};
    }
  }

 private:
  uint64_t varint_slow() {
    uint64_t v = 0;
    const char* at = p_;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) throw WireError{"varint runs past the end of the message", at};
      uint8_t b = static_cast<uint8_t>(*p_++);
      v |= uint64_t(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    throw WireError{"varint longer than 10 bytes", at};
  }

  const char* p_;
  const char* end_;
};

// ---- writing ----

inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline void put_varint(std::string& out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, n);
}

inline void put_tag(std::string& out, uint32_t field, WireType type) { put_varint(out, uint64_t(field) << 3 | type); }

inline void put_fixed32(std::string& out, uint32_t v) { append_le32(out, v); }

inline void put_fixed64(std::string& out, uint64_t v) { append_le64(out, v); }

}  // namespace pipec::wire

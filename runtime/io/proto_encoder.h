// ProtoEncoder: one protocol buffers message written field by field, in the wire format of
// protobuf_wire.h. Enough for the messages pipec writes by hand (TensorBoard's Event and Summary,
// runtime/io/tf_event.h) without a protobuf library or generated code.
//
//   ProtoEncoder value;
//   value.add_bytes(1, "epoch_loss").add_float(2, 0.25f);   // Summary.Value{tag, simple_value}
//   ProtoEncoder summary;
//   summary.add_message(1, value);                          // Summary{repeated value = 1}
//
// Fields are written in the order they are added; a reader accepts any order, and proto3 readers take
// the last of a repeated scalar field.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "runtime/io/protobuf_wire.h"

namespace pipec {

class ProtoEncoder {
 public:
  /// int32, int64, uint32, uint64, bool and enum fields. A negative int64 takes ten bytes (two's complement),
  /// as protobuf writes it.
  ProtoEncoder& add_varint(uint32_t field, uint64_t v) {
    wire::put_tag(out_, field, wire::kVarint);
    wire::put_varint(out_, v);
    return *this;
  }
  ProtoEncoder& add_int64(uint32_t field, int64_t v) { return add_varint(field, static_cast<uint64_t>(v)); }
  /// A `double` field: 8 bytes, little-endian IEEE 754.
  ProtoEncoder& add_double(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    wire::put_tag(out_, field, wire::kFixed64);
    wire::put_fixed64(out_, bits);
    return *this;
  }
  /// A `float` field: 4 bytes, little-endian IEEE 754.
  ProtoEncoder& add_float(uint32_t field, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    wire::put_tag(out_, field, wire::kFixed32);
    wire::put_fixed32(out_, bits);
    return *this;
  }
  /// A `string` or `bytes` field: its length as a varint, then the bytes.
  ProtoEncoder& add_bytes(uint32_t field, std::string_view v) {
    wire::put_tag(out_, field, wire::kLengthDelimited);
    wire::put_varint(out_, v.size());
    out_.append(v.data(), v.size());
    return *this;
  }
  /// An embedded message: length-delimited like bytes.
  ProtoEncoder& add_message(uint32_t field, const ProtoEncoder& m) { return add_bytes(field, m.bytes()); }

  /// The message so far.
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

}  // namespace pipec

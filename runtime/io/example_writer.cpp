#include "runtime/io/example_writer.h"

#include <bit>
#include <cstring>

#include "runtime/io/protobuf_wire.h"

namespace pipec {

using namespace wire;

void ExampleWriter::add_entry(std::string_view name, uint32_t list_field, std::string_view list) {
  // Feature { <list_field>: list }   (list_field 0 = an empty Feature)
  size_t feature_size =
      list_field ? varint_size(list_field << 3 | kLengthDelimited) + varint_size(list.size()) + list.size() : 0;
  // MapEntry { key = 1: name; value = 2: Feature }
  size_t entry_size = 1 + varint_size(name.size()) + name.size() + 1 + varint_size(feature_size) + feature_size;
  put_tag(entries_, 1, kLengthDelimited);
  put_varint(entries_, entry_size);
  put_tag(entries_, 1, kLengthDelimited);
  put_varint(entries_, name.size());
  entries_.append(name);
  put_tag(entries_, 2, kLengthDelimited);
  put_varint(entries_, feature_size);
  if (list_field) {
    put_tag(entries_, list_field, kLengthDelimited);
    put_varint(entries_, list.size());
    entries_.append(list);
  }
}

ExampleWriter& ExampleWriter::add_bytes(std::string_view name, std::span<const std::string_view> values) {
  list_.clear();
  for (std::string_view v : values) {
    put_tag(list_, 1, kLengthDelimited);
    put_varint(list_, v.size());
    list_.append(v);
  }
  add_entry(name, 1, list_);
  return *this;
}

ExampleWriter& ExampleWriter::add_float(std::string_view name, std::span<const float> values, bool packed) {
  list_.clear();
  if (packed) {
    if (!values.empty()) {  // protobuf writes no field at all for an empty packed list
      put_tag(list_, 1, kLengthDelimited);
      put_varint(list_, values.size() * 4);
      for (float v : values) put_fixed32(list_, std::bit_cast<uint32_t>(v));
    }
  } else {
    for (float v : values) {
      put_tag(list_, 1, kFixed32);
      put_fixed32(list_, std::bit_cast<uint32_t>(v));
    }
  }
  add_entry(name, 2, list_);
  return *this;
}

ExampleWriter& ExampleWriter::add_int64(std::string_view name, std::span<const int64_t> values, bool packed) {
  list_.clear();
  if (packed) {
    if (!values.empty()) {
      size_t size = 0;
      for (int64_t v : values) size += varint_size(static_cast<uint64_t>(v));
      put_tag(list_, 1, kLengthDelimited);
      put_varint(list_, size);
      for (int64_t v : values) put_varint(list_, static_cast<uint64_t>(v));
    }
  } else {
    for (int64_t v : values) {
      put_tag(list_, 1, kVarint);
      put_varint(list_, static_cast<uint64_t>(v));
    }
  }
  add_entry(name, 3, list_);
  return *this;
}

ExampleWriter& ExampleWriter::add_empty(std::string_view name) {
  add_entry(name, 0, {});
  return *this;
}

const std::string& ExampleWriter::serialize() {
  // Example { features = 1: Features { entries } }
  // (written even with no features: that is what TensorFlow emits for an Example whose features
  // field is set but empty)
  out_.clear();
  put_tag(out_, 1, kLengthDelimited);
  put_varint(out_, entries_.size());
  out_.append(entries_);
  return out_;
}

}  // namespace pipec

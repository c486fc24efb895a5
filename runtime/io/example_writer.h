// ExampleWriter: builds a serialized tf.train.Example from named features, without protobuf.
//
//   ExampleWriter w;
//   w.add_bytes("d", {board});  w.add_int64("s", {score});
//   sink.write(w.serialize());
//   w.clear();                           // reuse: the buffers keep their capacity
//
// Features are written in the order added (protobuf maps have no order; TensorFlow accepts any).
// Numbers are written packed, as TensorFlow does, unless `packed` is false (an encoding other
// writers use, and which the parser must accept: it is here so tests can produce it).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace pipec {

class ExampleWriter {
 public:
  ExampleWriter& add_bytes(std::string_view name, std::span<const std::string_view> values);
  ExampleWriter& add_bytes(std::string_view name, std::initializer_list<std::string_view> values) {
    return add_bytes(name, std::span<const std::string_view>(values.begin(), values.size()));
  }
  ExampleWriter& add_int64(std::string_view name, std::span<const int64_t> values, bool packed = true);
  ExampleWriter& add_int64(std::string_view name, std::initializer_list<int64_t> values, bool packed = true) {
    return add_int64(name, std::span<const int64_t>(values.begin(), values.size()), packed);
  }
  ExampleWriter& add_float(std::string_view name, std::span<const float> values, bool packed = true);
  ExampleWriter& add_float(std::string_view name, std::initializer_list<float> values, bool packed = true) {
    return add_float(name, std::span<const float>(values.begin(), values.size()), packed);
  }
  /// A Feature with no kind set (Feature{}), as some writers emit for null values.
  ExampleWriter& add_empty(std::string_view name);

  /// The Example holding every feature added since the last clear(). Valid until the next call.
  const std::string& serialize();
  void clear() { entries_.clear(); }

 private:
  // Appends the map entry {key = name, value = Feature{<field> = list}} given the list's bytes.
  void add_entry(std::string_view name, uint32_t list_field, std::string_view list);

  std::string entries_;  // the Features message body: one map entry after another
  std::string list_;     // scratch: one value list
  std::string out_;
};

}  // namespace pipec

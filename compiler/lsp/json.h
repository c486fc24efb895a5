// JSON for the language server: nlohmann-json's ordered_json (members keep the order they were set
// in, so the messages we write are stable), plus the protocol layer's three needs that it does not
// meet on its own:
//
// - parse_json: parsing a client message never throws and is depth-limited (kMaxJsonDepth), so a
//   hostile message cannot exhaust the stack in the recursive copy or serialization of the value;
// - dump_json: serialization never throws either: invalid UTF-8 in a string (an imported file read
//   from disk may hold some) becomes U+FFFD instead of a type_error;
// - JsonView: lenient reading of client input. `params["textDocument"]["uri"]` is null when any step
//   is missing or of another type, and the accessors take a fallback, where nlohmann's own
//   operator[] on a const value asserts and its get<> throws.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipec::lsp {

using Json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 256;

struct JsonParseResult {
  std::optional<Json> value;  // set on success
  std::string error;          // set on failure
  size_t error_offset = 0;    // the byte where the input stopped making sense
  bool ok() const { return value.has_value(); }
};

/// Parses one JSON document (RFC 8259, UTF-8; surrounding whitespace allowed, nothing after it).
/// Arrays and objects nested deeper than `max_depth` are an error.
JsonParseResult parse_json(std::string_view text, int max_depth = kMaxJsonDepth);

/// Compact serialization; never throws (invalid UTF-8 is replaced by U+FFFD).
std::string dump_json(const Json& value);

/// A read-only, never-throwing view of a (part of a) client message.
class JsonView {
 public:
  JsonView();                          // null
  JsonView(const Json& j) : j_(&j) {}  // NOLINT: implicit, so that functions take either

  /// The member `key`; a null view when this is not an object or has no such member.
  JsonView operator[](std::string_view key) const;
  /// The element `index`; a null view when this is not an array or is too short.
  JsonView operator[](size_t index) const;
  bool has(std::string_view key) const;

  bool is_null() const { return j_->is_null(); }
  bool is_bool() const { return j_->is_boolean(); }
  bool is_number() const { return j_->is_number(); }
  /// A number without fraction or exponent that fits in int64.
  bool is_integer() const;
  bool is_string() const { return j_->is_string(); }
  bool is_array() const { return j_->is_array(); }
  bool is_object() const { return j_->is_object(); }
  size_t size() const { return j_->is_array() || j_->is_object() ? j_->size() : 0; }
  /// The elements of an array; none for anything else.
  std::vector<JsonView> elements() const;

  bool as_bool(bool fallback = false) const { return j_->is_boolean() ? j_->get<bool>() : fallback; }
  /// The integer value; a fraction is truncated; non-numbers and numbers beyond int64 give `fallback`.
  int64_t as_int(int64_t fallback = 0) const;
  /// The string; "" unless this is a string.
  const std::string& as_string() const;

  const Json& json() const { return *j_; }
  bool operator==(const Json& other) const { return *j_ == other; }
  bool operator!=(const Json& other) const { return *j_ != other; }

 private:
  const Json* j_;
};

/// Writes the value as dump_json does (for test failure messages and logs).
std::ostream& operator<<(std::ostream& os, JsonView v);

}  // namespace pipec::lsp

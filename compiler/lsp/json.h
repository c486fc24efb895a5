// A small JSON value type with a parser and a serializer, enough for the language server's JSON-RPC.
//
// Parsing never throws and never crashes on malformed input: it returns an error message with the byte
// offset where the input stopped making sense. Nesting is limited (kMaxJsonDepth) so that hostile input
// cannot exhaust the stack. Objects keep their keys in insertion order; serialization is compact and
// escapes control characters, so the output is always valid JSON for valid UTF-8 strings.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pipec::lsp {

constexpr int kMaxJsonDepth = 256;

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Json>;
  using Member = std::pair<std::string, Json>;
  using Object = std::vector<Member>;

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : kind_(Kind::Bool), bool_(b) {}
  Json(long long v) : kind_(Kind::Number), num_(static_cast<double>(v)), int_(v), is_int_(true) {}
  Json(int v) : Json(static_cast<long long>(v)) {}
  Json(unsigned v) : Json(static_cast<long long>(v)) {}
  Json(long v) : Json(static_cast<long long>(v)) {}
  Json(unsigned long v) : Json(static_cast<long long>(v)) {}
  Json(unsigned long long v) : Json(static_cast<long long>(v)) {}
  Json(double v) : kind_(Kind::Number), num_(v) {}
  Json(const char* s) : kind_(Kind::String), str_(s) {}
  Json(std::string s) : kind_(Kind::String), str_(std::move(s)) {}
  Json(std::string_view s) : kind_(Kind::String), str_(s) {}
  Json(Array a) : kind_(Kind::Array), arr_(std::move(a)) {}
  Json(Object o) : kind_(Kind::Object), obj_(std::move(o)) {}

  static Json array(Array a = {}) { return Json(std::move(a)); }
  static Json object(Object o = {}) { return Json(std::move(o)); }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Number; }
  /// A number without fraction or exponent that fits in int64.
  bool is_integer() const { return kind_ == Kind::Number && is_int_; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }

  bool as_bool(bool fallback = false) const { return is_bool() ? bool_ : fallback; }
  double as_double(double fallback = 0) const { return is_number() ? num_ : fallback; }
  /// The integer value; numbers with a fraction are truncated, non-numbers give `fallback`.
  int64_t as_int(int64_t fallback = 0) const;
  const std::string& as_string() const;  // "" unless a string
  const Array& as_array() const;         // empty unless an array
  const Object& as_object() const;       // empty unless an object
  Array& mutable_array();                // turns a non-array into an empty array first
  Object& mutable_object();              // turns a non-object into an empty object first

  /// Object member lookup: null when absent or when this is not an object.
  const Json* find(std::string_view key) const;
  /// Object member, or a shared null value when absent.
  const Json& operator[](std::string_view key) const;
  /// Array element, or a shared null value when out of range.
  const Json& operator[](size_t index) const;
  /// Sets (or replaces) an object member; turns a non-object into an object first. Returns *this.
  Json& set(std::string key, Json value);
  /// Appends to an array; turns a non-array into an array first. Returns *this.
  Json& push(Json value);
  size_t size() const;  // elements or members; 0 for scalars

  bool operator==(const Json& o) const;
  bool operator!=(const Json& o) const { return !(*this == o); }

  /// Compact serialization.
  std::string dump() const;
  void dump_to(std::string& out) const;

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double num_ = 0;
  int64_t int_ = 0;
  bool is_int_ = false;
  std::string str_;
  Array arr_;
  Object obj_;

  friend class JsonParser;
};

struct JsonParseResult {
  std::optional<Json> value;  // set on success
  std::string error;          // set on failure
  size_t error_offset = 0;
  bool ok() const { return value.has_value(); }
};

/// Parses one JSON document (RFC 8259; surrounding whitespace allowed, nothing else after it).
JsonParseResult parse_json(std::string_view text, int max_depth = kMaxJsonDepth);

/// Appends `s` as a quoted, escaped JSON string.
void json_escape_to(std::string& out, std::string_view s);

}  // namespace pipec::lsp

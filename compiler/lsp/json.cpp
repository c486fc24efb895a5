#include "compiler/lsp/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pipec::lsp {

namespace {

const Json& null_json() {
  static const Json n;
  return n;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

constexpr const char* kReplacementChar = "\xEF\xBF\xBD";

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Accessors

int64_t Json::as_int(int64_t fallback) const {
  if (!is_number()) return fallback;
  if (is_int_) return int_;
  if (!std::isfinite(num_) || num_ >= 9.2e18 || num_ <= -9.2e18) return fallback;
  return static_cast<int64_t>(num_);
}

const std::string& Json::as_string() const {
  static const std::string empty;
  return is_string() ? str_ : empty;
}

const Json::Array& Json::as_array() const {
  static const Array empty;
  return is_array() ? arr_ : empty;
}

const Json::Object& Json::as_object() const {
  static const Object empty;
  return is_object() ? obj_ : empty;
}

Json::Array& Json::mutable_array() {
  if (!is_array()) *this = Json(Array{});
  return arr_;
}

Json::Object& Json::mutable_object() {
  if (!is_object()) *this = Json(Object{});
  return obj_;
}

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& m : obj_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const Json& Json::operator[](std::string_view key) const {
  const Json* j = find(key);
  return j ? *j : null_json();
}

const Json& Json::operator[](size_t index) const {
  if (!is_array() || index >= arr_.size()) return null_json();
  return arr_[index];
}

Json& Json::set(std::string key, Json value) {
  Object& o = mutable_object();
  for (auto& m : o) {
    if (m.first == key) {
      m.second = std::move(value);
      return *this;
    }
  }
  o.emplace_back(std::move(key), std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  mutable_array().push_back(std::move(value));
  return *this;
}

size_t Json::size() const {
  if (is_array()) return arr_.size();
  if (is_object()) return obj_.size();
  return 0;
}

bool Json::operator==(const Json& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Null: return true;
    case Kind::Bool: return bool_ == o.bool_;
    case Kind::Number: return (is_int_ && o.is_int_) ? int_ == o.int_ : num_ == o.num_;
    case Kind::String: return str_ == o.str_;
    case Kind::Array: return arr_ == o.arr_;
    case Kind::Object: return obj_ == o.obj_;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------
// Serialization

void json_escape_to(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = utf8_sequence_length(s, i);
      if (n == 0) {
        out += kReplacementChar;  // invalid UTF-8 would make the whole message invalid
        ++i;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

void Json::dump_to(std::string& out) const {
  switch (kind_) {
    case Kind::Null: out += "null"; break;
    case Kind::Bool: out += bool_ ? "true" : "false"; break;
    case Kind::Number: {
      if (is_int_) {
        out += std::to_string(int_);
      } else if (!std::isfinite(num_)) {
        out += "null";
      } else if (num_ == std::floor(num_) && std::fabs(num_) < 9e15) {
        out += std::to_string(static_cast<int64_t>(num_));
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", num_);
        out += buf;
      }
      break;
    }
    case Kind::String: json_escape_to(out, str_); break;
    case Kind::Array:
      out += '[';
      for (size_t i = 0; i < arr_.size(); ++i) {
        if (i) out += ',';
        arr_[i].dump_to(out);
      }
      out += ']';
      break;
    case Kind::Object:
      out += '{';
      for (size_t i = 0; i < obj_.size(); ++i) {
        if (i) out += ',';
        json_escape_to(out, obj_[i].first);
        out += ':';
        obj_[i].second.dump_to(out);
      }
      out += '}';
      break;
  }
}

std::string Json::dump() const {
  std::string out;
  dump_to(out);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Parsing

class JsonParser {
 public:
  JsonParser(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

  JsonParseResult run() {
    JsonParseResult r;
    skip_ws();
    Json v;
    if (!value(v, 0)) {
      r.error = error_;
      r.error_offset = pos_;
      return r;
    }
    skip_ws();
    if (pos_ != s_.size()) {
      r.error = "unexpected text after the JSON value";
      r.error_offset = pos_;
      return r;
    }
    r.value = std::move(v);
    return r;
  }

 private:
  bool fail(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
    return false;
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool value(Json& out, int depth) {
    if (depth > max_depth_) return fail("JSON nests too deeply");
    if (pos_ >= s_.size()) return fail("unexpected end of input");
    char c = s_[pos_];
    switch (c) {
      case 'n':
        out = Json();
        return literal("null");
      case 't':
        out = Json(true);
        return literal("true");
      case 'f':
        out = Json(false);
        return literal("false");
      case '"': {
        std::string str;
        if (!string(str)) return false;
        out = Json(std::move(str));
        return true;
      }
      case '[': return array(out, depth);
      case '{': return object(out, depth);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return number(out);
        return fail("unexpected character");
    }
  }

  bool array(Json& out, int depth) {
    ++pos_;  // [
    Json::Array items;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      out = Json(std::move(items));
      return true;
    }
    for (;;) {
      skip_ws();
      Json item;
      if (!value(item, depth + 1)) return false;
      items.push_back(std::move(item));
      skip_ws();
      if (pos_ >= s_.size()) return fail("unterminated array");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        break;
      }
      return fail("expected `,` or `]` in array");
    }
    out = Json(std::move(items));
    return true;
  }

  bool object(Json& out, int depth) {
    ++pos_;  // {
    Json::Object members;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      out = Json(std::move(members));
      return true;
    }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a string key in object");
      std::string key;
      if (!string(key)) return false;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected `:` after object key");
      ++pos_;
      skip_ws();
      Json v;
      if (!value(v, depth + 1)) return false;
      // Duplicate keys: the last one wins, as in most parsers.
      bool replaced = false;
      for (auto& m : members) {
        if (m.first == key) {
          m.second = std::move(v);
          replaced = true;
          break;
        }
      }
      if (!replaced) members.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (pos_ >= s_.size()) return fail("unterminated object");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        break;
      }
      return fail("expected `,` or `}` in object");
    }
    out = Json(std::move(members));
    return true;
  }

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool hex4(uint32_t& out) {
    if (pos_ + 4 > s_.size()) return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      int d = hex_digit(s_[pos_ + i]);
      if (d < 0) return fail("invalid \\u escape");
      out = out * 16 + static_cast<uint32_t>(d);
    }
    pos_ += 4;
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail("control character in string");
      if (c == '\\') {
        if (pos_ + 1 >= s_.size()) return fail("unterminated escape");
        char e = s_[pos_ + 1];
        pos_ += 2;
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp;
            if (!hex4(cp)) return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              // A high surrogate must be followed by an escaped low surrogate.
              uint32_t lo = 0;
              if (pos_ + 1 < s_.size() && s_[pos_] == '\\' && s_[pos_ + 1] == 'u') {
                size_t save = pos_;
                pos_ += 2;
                if (!hex4(lo)) return false;
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                  cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else {
                  pos_ = save;
                  cp = 0xFFFD;
                }
              } else {
                cp = 0xFFFD;
              }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              cp = 0xFFFD;  // a lone low surrogate
            }
            append_utf8(out, cp);
            break;
          }
          default: return fail("invalid escape in string");
        }
        continue;
      }
      if (c >= 0x80) {
        size_t n = utf8_sequence_length(s_, pos_);
        if (n == 0) {
          out += kReplacementChar;
          ++pos_;
        } else {
          out.append(s_.data() + pos_, n);
          pos_ += n;
        }
        continue;
      }
      out += static_cast<char>(c);
      ++pos_;
    }
  }

  bool number(Json& out) {
    size_t start = pos_;
    auto digit = [&](size_t i) { return i < s_.size() && s_[i] >= '0' && s_[i] <= '9'; };
    if (s_[pos_] == '-') ++pos_;
    if (!digit(pos_)) return fail("invalid number");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (digit(pos_)) ++pos_;
    }
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digit(pos_)) return fail("invalid number: digits expected after `.`");
      while (digit(pos_)) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit(pos_)) return fail("invalid number: digits expected in exponent");
      while (digit(pos_)) ++pos_;
    }
    std::string text(s_.substr(start, pos_ - start));
    if (integral) {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') {
        out = Json(v);
        return true;
      }
    }
    out = Json(std::strtod(text.c_str(), nullptr));
    return true;
  }

  std::string_view s_;
  int max_depth_;
  size_t pos_ = 0;
  std::string error_;
};

JsonParseResult parse_json(std::string_view text, int max_depth) {
  return JsonParser(text, max_depth).run();
}

}  // namespace pipec::lsp

#include "runtime/train/persist/safetensors.h"

#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/core/half.h"

namespace pipec {

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// A JSON value, as much of JSON as a safetensors header uses. An object's members are a vector of
// JsonField (not of std::pair) because std::pair needs a complete Json where libc++/clang checks it.
struct JsonField;
struct Json {
  enum Kind { Null, Number, String, Array, Object, Bool } kind = Null;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::vector<JsonField> fields;
};
struct JsonField {
  std::string key;
  Json value;
};

class JsonParser {
 public:
  JsonParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  Json parse() {
    Json v = value();
    space();
    if (at_ != s_.size()) fail("trailing characters after the header's object");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error(fmt::format("{}: not a safetensors file: header byte {}: {}", path_, at_, why));
  }
  void space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\t' || s_[at_] == '\r')) ++at_;
  }
  char peek() {
    space();
    if (at_ >= s_.size()) fail("the header ends early");
    return s_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected `{}`", c));
    ++at_;
  }
  Json value() {
    if (++depth_ > 64) fail("nested too deep");
    Json v;
    char c = peek();
    if (c == '{') {
      v.kind = Json::Object;
      ++at_;
      if (peek() == '}') {
        ++at_;
      } else {
        for (;;) {
          std::string key = string();
          expect(':');
          v.fields.push_back({key, value()});
          if (peek() == ',') {
            ++at_;
            continue;
          }
          expect('}');
          break;
        }
      }
    } else if (c == '[') {
      v.kind = Json::Array;
      ++at_;
      if (peek() == ']') {
        ++at_;
      } else {
        for (;;) {
          v.items.push_back(value());
          if (peek() == ',') {
            ++at_;
            continue;
          }
          expect(']');
          break;
        }
      }
    } else if (c == '"') {
      v.kind = Json::String;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Json::Number;
      size_t start = at_;
      while (at_ < s_.size() && (std::strchr("+-.eE", s_[at_]) || (s_[at_] >= '0' && s_[at_] <= '9'))) ++at_;
      v.number = std::strtod(s_.substr(start, at_ - start).c_str(), nullptr);
    } else if (s_.compare(at_, 4, "true") == 0 || s_.compare(at_, 5, "false") == 0) {
      v.kind = Json::Bool;
      at_ += s_[at_] == 't' ? 4 : 5;
    } else if (s_.compare(at_, 4, "null") == 0) {
      at_ += 4;
    } else {
      fail("expected a JSON value");
    }
    --depth_;
    return v;
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_ >= s_.size()) fail("a string does not end");
      char c = s_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) fail("a string does not end");
      char e = s_[at_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (at_ + 4 > s_.size()) fail("a \\u escape ends early");
          unsigned code = std::stoul(s_.substr(at_, 4), nullptr, 16);
          at_ += 4;
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xc0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
          }
          break;
        }
        default: out += e;
      }
    }
  }

  const std::string& s_;
  const std::string& path_;
  size_t at_ = 0;
  int depth_ = 0;
};

size_t dtype_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F64") return 8;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

}  // namespace

std::string safetensors_bytes(const std::vector<SafetensorsEntry>& entries,
                              const std::map<std::string, std::string>& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      header += (first ? "" : ",") + json_string(k) + ":" + json_string(v);
      first = false;
    }
    header += "}";
  }
  uint64_t at = 0;
  for (const SafetensorsEntry& e : entries) {
    std::string shape;
    for (int64_t d : e.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    uint64_t bytes = static_cast<uint64_t>(shape_num_elements(e.shape)) * 4;
    header += fmt::format("{}{}:{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          header.size() > 1 ? "," : "", json_string(e.name), shape, at, at + bytes);
    at += bytes;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  std::string out;
  out.reserve(8 + header.size() + at);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(n >> (8 * i)));
  out += header;
  // The data is little-endian f32, which is what this (x86-64, ARM64) machine holds in memory.
  for (const SafetensorsEntry& e : entries)
    out.append(reinterpret_cast<const char*>(e.data), static_cast<size_t>(shape_num_elements(e.shape)) * 4);
  return out;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& entries,
                       const std::map<std::string, std::string>& metadata) {
  const std::string bytes = safetensors_bytes(entries, metadata);
  std::filesystem::path target(path);
  std::filesystem::path tmp = target;
  tmp += fmt::format(".tmp{}", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("{}: writing failed: {}", path, std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw std::runtime_error(fmt::format("{}: cannot write: {}", path, ec.message()));
  }
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_safetensors(bytes, path);
}

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& path) {
  if (bytes.size() < 8)
    throw std::runtime_error(
        fmt::format("{}: not a safetensors file: {} bytes, shorter than its 8-byte header length", path, bytes.size()));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (n > bytes.size() - 8 || n > (100u << 20))
    throw std::runtime_error(fmt::format("{}: not a safetensors file: its header claims {} bytes, the file has {}",
                                         path, n, bytes.size() - 8));
  std::string header = bytes.substr(8, n);
  Json root = JsonParser(header, path).parse();
  if (root.kind != Json::Object)
    throw std::runtime_error(fmt::format("{}: not a safetensors file: the header is not a JSON object", path));
  const size_t data_start = 8 + n;
  const uint64_t data_size = bytes.size() - data_start;
  SafetensorsFile f;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::map<std::string, uint64_t> begins;
  for (const JsonField& member : root.fields) {
    const std::string& name = member.key;
    const Json& v = member.value;
    if (name == "__metadata__") {
      for (const JsonField& m : v.fields) f.metadata[m.key] = m.value.text;
      continue;
    }
    auto field = [&v](const char* key) -> const Json* {
      for (const JsonField& m : v.fields)
        if (m.key == key) return &m.value;
      return nullptr;
    };
    const Json* dtype = field("dtype");
    const Json* shape = field("shape");
    const Json* offsets = field("data_offsets");
    if (v.kind != Json::Object || !dtype || !shape || !offsets || dtype->kind != Json::String ||
        shape->kind != Json::Array || offsets->kind != Json::Array || offsets->items.size() != 2)
      throw std::runtime_error(fmt::format("{}: tensor `{}` needs dtype, shape and data_offsets", path, name));
    size_t size = dtype_size(dtype->text);
    if (!size)
      throw std::runtime_error(
          fmt::format("{}: tensor `{}` is {}; weights must be F32, F64, F16 or BF16", path, name, dtype->text));
    SafetensorsTensor t;
    for (const Json& d : shape->items) {
      if (d.kind != Json::Number || d.number < 0)
        throw std::runtime_error(fmt::format("{}: tensor `{}` has a bad shape", path, name));
      t.shape.push_back(static_cast<int64_t>(d.number));
    }
    uint64_t begin = static_cast<uint64_t>(offsets->items[0].number),
             end = static_cast<uint64_t>(offsets->items[1].number);
    uint64_t count = static_cast<uint64_t>(shape_num_elements(t.shape));
    if (end < begin || end > data_size || end - begin != count * size)
      throw std::runtime_error(
          fmt::format("{}: tensor `{}`: data_offsets [{}, {}] do not hold {} values of {} in {} bytes of data", path,
                      name, begin, end, count, dtype->text, data_size));
    const char* p = bytes.data() + data_start + begin;
    t.data.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      if (dtype->text == "F32") {
        std::memcpy(&t.data[i], p + 4 * i, 4);
      } else if (dtype->text == "F64") {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        t.data[i] = static_cast<float>(d);
      } else {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        t.data[i] = dtype->text == "F16" ? half_bits_to_float(h) : bf16_bits_to_float(h);
      }
    }
    ranges.push_back({begin, end});
    begins[name] = begin;
    f.order.push_back(name);
    f.tensors[name] = std::move(t);
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (const auto& [b, e] : ranges) {
    if (b != at)
      throw std::runtime_error(
          fmt::format("{}: tensor data overlaps or leaves a gap at byte {}", path, std::min(b, at)));
    at = e;
  }
  if (at != data_size)
    throw std::runtime_error(fmt::format("{}: {} bytes of data after the last tensor", path, data_size - at));
  std::sort(f.order.begin(), f.order.end(),
            [&](const std::string& a, const std::string& b) { return begins[a] < begins[b]; });
  return f;
}

}  // namespace pipec

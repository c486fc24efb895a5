#include "compiler/lsp/positions.h"

#include <algorithm>
#include <cctype>

namespace pipec::lsp {

namespace {

// Byte length of the UTF-8 character that starts with `c` (1 for stray continuation bytes).
uint32_t utf8_length(unsigned char c) {
  if (c >= 0xF0 && c <= 0xF7) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (uint32_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') starts_.push_back(i + 1);
}

Position LineIndex::position(uint32_t offset) const {
  if (starts_.empty()) return {};
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - starts_.begin()) - 1;
  uint32_t character = 0;
  for (uint32_t i = starts_[line]; i < offset;) {
    uint32_t n = utf8_length(static_cast<unsigned char>(text_[i]));
    if (i + n > offset) break;  // `offset` is inside this character
    character += n == 4 ? 2 : 1;
    i += n;
  }
  return {line, character};
}

uint32_t LineIndex::offset(Position pos) const {
  if (starts_.empty()) return 0;
  if (pos.line >= starts_.size()) return static_cast<uint32_t>(text_.size());
  uint32_t i = starts_[pos.line];
  uint32_t end = pos.line + 1 < starts_.size() ? starts_[pos.line + 1] - 1 : static_cast<uint32_t>(text_.size());
  if (end > i && text_[end - 1] == '\r' && pos.line + 1 < starts_.size()) --end;
  uint32_t units = 0;
  while (i < end && units < pos.character) {
    uint32_t n = utf8_length(static_cast<unsigned char>(text_[i]));
    if (i + n > end) n = end - i;
    units += n == 4 ? 2 : 1;
    i += n;
  }
  return i;
}

std::string uri_to_path(std::string_view uri) {
  constexpr std::string_view kPrefix = "file://";
  if (uri.substr(0, kPrefix.size()) != kPrefix) return std::string(uri);
  std::string_view rest = uri.substr(kPrefix.size());
  // file://host/path: drop an authority other than localhost.
  if (!rest.empty() && rest.front() != '/') {
    size_t slash = rest.find('/');
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex_value(rest[i + 1]) >= 0 && hex_value(rest[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(rest[i + 1]) * 16 + hex_value(rest[i + 2]));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  // Windows drive letters: /c:/x -> c:/x
  if (out.size() >= 3 && out[0] == '/' && out[2] == ':' && std::isalpha(static_cast<unsigned char>(out[1])))
    out.erase(0, 1);
  return out;
}

std::string path_to_uri(std::string_view path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "file://";
  if (path.empty() || path.front() != '/') out += '/';
  for (char ch : path) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace pipec::lsp

// Conversions between byte offsets (what SourceRange holds) and LSP positions: 0-based lines and
// 0-based characters counted in UTF-16 code units, as the protocol's default position encoding says.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipec::lsp {

struct Position {
  uint32_t line = 0;
  uint32_t character = 0;  // UTF-16 code units
  bool operator==(const Position& o) const { return line == o.line && character == o.character; }
};

class LineIndex {
 public:
  LineIndex() = default;
  explicit LineIndex(std::string_view text);

  /// The position of byte `offset` (clamped to the text; an offset inside a multi-byte character
  /// counts from that character's start).
  Position position(uint32_t offset) const;
  /// The byte offset of `pos`; lines past the end give the end of the text, characters past the end
  /// of their line give the end of that line.
  uint32_t offset(Position pos) const;
  uint32_t line_count() const { return static_cast<uint32_t>(starts_.size()); }
  std::string_view text() const { return text_; }

 private:
  std::string_view text_;
  std::vector<uint32_t> starts_;  // byte offset of each line's first character
};

/// "file:///a/b%20c.pipe" -> "/a/b c.pipe"; anything that is not a file URI is returned unchanged.
std::string uri_to_path(std::string_view uri);
/// "/a/b c.pipe" -> "file:///a/b%20c.pipe".
std::string path_to_uri(std::string_view path);

}  // namespace pipec::lsp

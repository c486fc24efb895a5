// Source files and locations.
//
// A SourceRange is a half-open byte range in one file; line and column are computed on demand so the
// AST stays small. Columns are 1-based and count bytes, like clang's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pipec {

struct SourceRange {
  uint32_t file = 0;   // index into SourceManager; 0 = no file
  uint32_t begin = 0;  // byte offset of the first character
  uint32_t end = 0;    // byte offset one past the last character
  bool valid() const { return file != 0; }
  bool contains(uint32_t offset) const { return offset >= begin && offset < end; }
};

struct LineCol {
  uint32_t line = 0;  // 1-based
  uint32_t col = 0;   // 1-based, in bytes
};

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  LineCol line_col(uint32_t offset) const;
  /// The text of 1-based line `line`, without its line break.
  std::string_view line_text(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }
  /// Byte offset of a 1-based line and column (clamped to the file).
  uint32_t offset_of(uint32_t line, uint32_t col) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

/// Owns every file a compilation reads (the main spec and its imports).
class SourceManager {
 public:
  /// Adds a file; returns its id (>= 1).
  uint32_t add(std::string path, std::string text);
  const SourceFile& file(uint32_t id) const { return *files_.at(id - 1); }
  uint32_t size() const { return static_cast<uint32_t>(files_.size()); }
  /// The id of an already-added path, or 0.
  uint32_t find(std::string_view path) const;

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

/// Reads a whole file as bytes. On failure returns false with `error` saying why ("it is a directory",
/// or the system's reason such as "No such file or directory").
bool read_source_file(const std::string& path, std::string& text, std::string& error);

}  // namespace pipec

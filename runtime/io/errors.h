// DataError: the one exception type the I/O layer throws for bad, missing or unreadable input.
//
// A DataError keeps *where* the problem is (file, record index, byte offset) apart from *what* it
// is (the reason), so a layer that knows more context can re-throw it with a fuller location
// instead of parsing or nesting message strings. The example parser, for instance, only knows the
// record's index within a batch; the dataset that fed it the batch knows the file and the index of
// the batch's first record, and rewrites the location with `with_location`.
//
// what() is always the composed message, e.g.
//   "data/x.tfrecord: record 3 at byte offset 1042: data CRC mismatch (corrupt record)".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pipec {

/// Where in the input a DataError happened. Every part is optional (empty / -1 = unknown).
struct DataLocation {
  std::string file;
  int64_t record = -1;  ///< index of the record (0-based) in the file, or in the batch
  int64_t offset = -1;  ///< byte offset in the file (of the record's start when record >= 0)
  /// The offset counts bytes of the decompressed stream (the file was gzip/zlib compressed).
  bool uncompressed_offset = false;
};

class DataError : public std::runtime_error {
 public:
  enum class Kind {
    DataLoss,         ///< the bytes are corrupt or cut short
    NotFound,         ///< a file or glob that matches nothing
    InvalidArgument,  ///< well-formed data that does not match what was asked for, or a bad option
    Io,               ///< the operating system failed a read, write, open, rename, ...
  };

  DataError(Kind kind, std::string reason, DataLocation where = {});

  Kind kind() const { return kind_; }
  /// The message without the location prefix.
  const std::string& reason() const { return reason_; }
  const DataLocation& location() const { return where_; }

  /// The same error at another location (typically: the same one with more context filled in).
  DataError with_location(DataLocation where) const { return DataError(kind_, reason_, std::move(where)); }

  /// "data loss", "not found", "invalid argument", "I/O error".
  static std::string_view kind_name(Kind kind);
  /// The prefix what() puts before the reason ("file: record 3 at byte offset 10: "), or "".
  static std::string format_location(const DataLocation& where);

 private:
  Kind kind_;
  std::string reason_;
  DataLocation where_;
};

}  // namespace pipec

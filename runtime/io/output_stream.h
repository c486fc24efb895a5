// OutputStream: a buffered byte sink over a file or a string, optionally gzip/zlib compressing.
//
// Writes are buffered and reach the OS in large chunks. finish() is the only point where a stream
// is complete: it flushes, ends the compressed stream (trailer included), optionally fsyncs and
// closes the file. Dropping a stream without finish() closes the file but leaves it incomplete;
// TFRecordWriter relies on that to never publish a half-written file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/io/compression.h"

namespace pipec {

class OutputStream {
 public:
  static constexpr size_t kDefaultBufferSize = size_t(256) << 10;

  virtual ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  virtual void write(const void* data, size_t n) = 0;
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Flushes and ends the stream; with `sync`, the data is on disk when this returns. Throws
  /// DataError (Io) on failure. Nothing may be written afterwards.
  virtual void finish(bool sync) = 0;
  /// Bytes passed to write() so far (before compression).
  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& name() const { return name_; }

 protected:
  explicit OutputStream(std::string name) : name_(std::move(name)) {}
  uint64_t bytes_written_ = 0;

 private:
  std::string name_;
};

/// Creates (or truncates) `path` for writing, mode 0644.
std::unique_ptr<OutputStream> create_file_stream(const std::string& path,
                                                 size_t buffer_size = OutputStream::kDefaultBufferSize);
/// A stream appending to `*out` (which must outlive it); for tests and in-memory encoding.
std::unique_ptr<OutputStream> create_string_stream(std::string* out, std::string name = "<memory>");
/// Compresses into `sink` (returned unchanged for Compression::None). `level` is zlib's 0..9, or
/// -1 for its default (6).
std::unique_ptr<OutputStream> create_compressing_stream(std::unique_ptr<OutputStream> sink, Compression compression,
                                                        int level = -1,
                                                        size_t buffer_size = OutputStream::kDefaultBufferSize);

}  // namespace pipec

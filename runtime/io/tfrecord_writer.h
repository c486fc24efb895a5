// TFRecordWriter: writes one TFRecord file (plain, gzip or zlib) atomically.
//
// Records go to "<path>.tmp"; close() finishes the stream, fsyncs it and renames it to <path>, so
// a reader never sees a half-written file under the real name. A writer destroyed without close()
// (an exception unwinding, a cancelled job) deletes its .tmp file and publishes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/io/compression.h"
#include "runtime/io/output_stream.h"

namespace pipec {

struct TFRecordWriterOptions {
  Compression compression = Compression::None;
  int compression_level = -1;  ///< zlib level 0..9; -1 = zlib's default
  size_t buffer_size = OutputStream::kDefaultBufferSize;
  /// fsync the file (and its directory, after the rename) on close: durable, but slower.
  bool sync = true;
};

class TFRecordWriter {
 public:
  explicit TFRecordWriter(std::string path, TFRecordWriterOptions options = {});
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  void write(std::string_view record);
  /// Finishes the file and moves it into place. Idempotent. Throws DataError (Io) on failure, in
  /// which case the .tmp file is removed.
  void close();
  /// Drops everything written: removes the .tmp file. Idempotent; never throws.
  void abort() noexcept;

  const std::string& path() const { return path_; }
  std::string temp_path() const { return path_ + ".tmp"; }
  int64_t records_written() const { return records_; }
  bool is_open() const { return stream_ != nullptr; }

 private:
  std::string path_;
  TFRecordWriterOptions options_;
  std::unique_ptr<OutputStream> stream_;
  int64_t records_ = 0;
  bool temp_exists_ = false;
};

}  // namespace pipec

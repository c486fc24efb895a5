// InputStream: a buffered byte source with a peek/consume interface, over a file, a string, or a
// gzip/zlib stream wrapped around either.
//
// peek() hands out views of the stream's own buffer, so a record reader can return a record that
// sits wholly in the buffer without copying it. The buffer grows when a caller asks for more
// contiguous bytes than it holds (a record bigger than the buffer), but only as fast as data
// actually arrives, so a corrupt length field cannot make it allocate gigabytes.
//
// offset() counts the bytes of the stream as the caller sees them, i.e. decompressed bytes for a
// gzip/zlib stream: that is what TFRecord offsets in error messages refer to.
//
// Every failure is a DataError naming the stream (its path): NotFound/Io for the file, DataLoss for
// corrupt or truncated compressed data. A compressed stream that stops before its end marker is
// "gzip stream truncated", never a silent end of file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/io/compression.h"

namespace pipec {

class InputStream {
 public:
  static constexpr size_t kDefaultBufferSize = size_t(256) << 10;

  virtual ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  /// The name used in error messages: the path for files.
  const std::string& name() const { return name_; }
  /// Gzip/Zlib when this stream decompresses (its offsets are then decompressed offsets).
  Compression compression() const { return compression_; }
  /// Bytes consumed so far = the offset of the first byte the next peek() returns.
  uint64_t offset() const { return offset_; }

  /// The next min(n, bytes left) bytes, contiguous, without consuming them. Shorter than n only at
  /// the end of the stream. Valid until the next call of a non-const method.
  std::string_view peek(size_t n) {
    if (end_ - pos_ >= n) return std::string_view(buf_.get() + pos_, n);
    std::string_view all = peek_slow(n);
    return all.substr(0, n);
  }
  /// Whatever is buffered: at least one byte unless the stream is at its end (then empty).
  std::string_view peek_some() {
    if (end_ > pos_) return std::string_view(buf_.get() + pos_, end_ - pos_);
    return peek_slow(1);
  }
  /// Skips n bytes that the last peek returned.
  void consume(size_t n) {
    pos_ += n;
    offset_ += n;
  }
  /// Copies up to n bytes into dst and consumes them; returns fewer than n only at the end.
  size_t read(void* dst, size_t n);

  /// Keeps every byte that peek() has returned so far where it is, for as long as the caller keeps
  /// the returned pointer: when the stream next needs room it goes on in another buffer (one that no
  /// caller holds any more, or a new one) instead of moving or overwriting those bytes. A record
  /// reader uses it to hand out records that stay valid after it reads on, without copying them
  /// (the tfrecord source frames a chunk of records as views, parsed later on another thread).
  /// Holders must release the pointer on the thread that reads the stream, or synchronize with it.
  std::shared_ptr<const char[]> hold_buffer() const { return buf_; }
  /// The buffer peek() currently returns views of: equal for views that one hold_buffer() covers.
  const char* buffer_data() const { return buf_.get(); }

 protected:
  InputStream(std::string name, Compression compression, size_t buffer_size);
  /// Writes up to `capacity` (> 0) bytes of the stream to dst; returns 0 only at the end. Throws
  /// DataError on failure.
  virtual size_t produce(char* dst, size_t capacity) = 0;

 private:
  std::string_view peek_slow(size_t n);
  // Makes buf_ a buffer of at least `cap` bytes that no holder shares, the unconsumed bytes at its start.
  void move_to_unheld_buffer(size_t cap);

  std::string name_;
  Compression compression_;
  std::shared_ptr<char[]> buf_;
  size_t cap_ = 0;
  // Buffers left behind while held (hold_buffer), with their capacities: reused once nobody holds them.
  std::vector<std::pair<std::shared_ptr<char[]>, size_t>> left_behind_;
  size_t pos_ = 0;  // first unconsumed byte in buf_
  size_t end_ = 0;  // one past the last valid byte in buf_
  uint64_t offset_ = 0;
  bool at_end_ = false;
};

/// Opens a file for buffered reading. Missing file: NotFound; a directory: InvalidArgument.
std::unique_ptr<InputStream> open_file_stream(const std::string& path,
                                              size_t buffer_size = InputStream::kDefaultBufferSize);
/// A stream over an in-memory copy of `data`; `name` appears in error messages.
std::unique_ptr<InputStream> open_memory_stream(std::string name, std::string data,
                                                size_t buffer_size = InputStream::kDefaultBufferSize);
/// Decompresses `source` (returned unchanged for Compression::None). Gzip accepts any header flags
/// (FNAME, FEXTRA, ...) and several concatenated members, as gzip(1) does. A source with no bytes
/// at all is an empty stream, as in TensorFlow.
std::unique_ptr<InputStream> open_decompressing_stream(std::unique_ptr<InputStream> source, Compression compression,
                                                       size_t buffer_size = InputStream::kDefaultBufferSize);
/// open_file_stream + open_decompressing_stream.
std::unique_ptr<InputStream> open_input_stream(const std::string& path, Compression compression,
                                               size_t buffer_size = InputStream::kDefaultBufferSize);

}  // namespace pipec

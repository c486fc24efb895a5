// InputStream that decompresses gzip or zlib data read from another InputStream, with zlib.
//
// Errors are reported lazily: when the compressed data turns out to be truncated or corrupt, the
// bytes decompressed before that point are still handed out, and the error is thrown by the next
// call. A record reader then returns every complete record before the damage and fails on the
// first record that the damage touches, which is what a user debugging a bad file wants to see.
#include <zlib.h>

#include <climits>
#include <new>
#include <optional>

#include <fmt/format.h>

#include "runtime/io/errors.h"
#include "runtime/io/input_stream.h"

namespace pipec {
namespace {

class InflateInputStream final : public InputStream {
 public:
  InflateInputStream(std::unique_ptr<InputStream> source, Compression compression, size_t buffer_size)
      : InputStream(source->name(), compression, buffer_size), source_(std::move(source)) {
    // 16 + MAX_WBITS: expect a gzip header and trailer; MAX_WBITS: a zlib header and trailer.
    int window_bits = compression == Compression::Gzip ? 16 + MAX_WBITS : MAX_WBITS;
    int rc = inflateInit2(&z_, window_bits);
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc != Z_OK)
      throw DataError(DataError::Kind::Io, fmt::format("zlib inflateInit2 failed ({})", rc),
                      DataLocation{.file = name()});
  }
  ~InflateInputStream() override { inflateEnd(&z_); }

 protected:
  size_t produce(char* dst, size_t capacity) override {
    if (pending_) throw *pending_;
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    // zlib counts in uInt; asking for less than the buffer holds is harmless.
    z_.avail_out = static_cast<uInt>(std::min<size_t>(capacity, UINT_MAX));
    const uInt asked = z_.avail_out;
    while (z_.avail_out > 0) {
      std::string_view in = source_->peek_some();
      if (member_ended_) {
        if (in.empty()) break;  // clean end of the last member
        if (compression() == Compression::Zlib) {
          fail_later("unexpected data after the end of the zlib stream", asked);
          break;
        }
        // Another gzip member follows (concatenated .gz files are one valid gzip stream).
        inflateReset(&z_);
        member_ended_ = false;
      }
      if (in.empty()) {
        // A completely empty file holds no stream at all; TensorFlow reads it as zero records.
        if (source_->offset() == 0) {
          member_ended_ = true;
          break;
        }
        fail_later(fmt::format("{} stream truncated: the compressed data ends after {} bytes, "
                               "before the end of the stream",
                               compression_name(compression()), source_->offset()),
                   asked);
        break;
      }
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      z_.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT_MAX));
      const uInt in_before = z_.avail_in, out_before = z_.avail_out;
      int rc = inflate(&z_, Z_NO_FLUSH);
      source_->consume(in_before - z_.avail_in);
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_MEM_ERROR) {
        throw std::bad_alloc();
      } else if (rc == Z_NEED_DICT) {
        fail_later(
            fmt::format("{} stream needs a preset dictionary, which is not supported", compression_name(compression())),
            asked);
        break;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        fail_later(fmt::format("{} stream corrupt: {}", compression_name(compression()),
                               z_.msg ? z_.msg : "invalid compressed data"),
                   asked);
        break;
      } else if (z_.avail_in == in_before && z_.avail_out == out_before) {
        // Input and output space were both available and zlib moved neither: it never will.
        fail_later(fmt::format("{} stream corrupt: decompression made no progress", compression_name(compression())),
                   asked);
        break;
      }
    }
    size_t produced = asked - z_.avail_out;
    produced_ += produced;
    if (produced == 0 && pending_) throw *pending_;
    return produced;
  }

 private:
  void fail_later(std::string reason, uInt asked) {
    uint64_t at = produced_ + (asked - z_.avail_out);
    pending_.emplace(DataError::Kind::DataLoss, std::move(reason),
                     DataLocation{.file = name(), .offset = static_cast<int64_t>(at), .uncompressed_offset = true});
  }

  std::unique_ptr<InputStream> source_;
  z_stream z_{};
  bool member_ended_ = false;
  uint64_t produced_ = 0;  // decompressed bytes handed to the base class so far
  std::optional<DataError> pending_;
};

}  // namespace

std::unique_ptr<InputStream> open_decompressing_stream(std::unique_ptr<InputStream> source, Compression compression,
                                                       size_t buffer_size) {
  if (compression == Compression::None) return source;
  return std::make_unique<InflateInputStream>(std::move(source), compression, buffer_size);
}

}  // namespace pipec

// OutputStream that gzip- or zlib-compresses into another OutputStream.
//
// Input is gathered in a buffer and compressed in large blocks: TFRecord writers issue three small
// writes per record, and calling deflate() for each would cost more than the compression itself.
#include <zlib.h>

#include <cstring>
#include <new>

#include <fmt/format.h>

#include "runtime/io/errors.h"
#include "runtime/io/output_stream.h"

namespace pipec {
namespace {

class DeflateOutputStream final : public OutputStream {
 public:
  DeflateOutputStream(std::unique_ptr<OutputStream> sink, Compression compression, int level, size_t buffer_size)
      : OutputStream(sink->name()),
        sink_(std::move(sink)),
        in_(new char[buffer_size]),
        out_(new char[buffer_size]),
        cap_(buffer_size) {
    if (level < -1 || level > 9)
      throw DataError(DataError::Kind::InvalidArgument, fmt::format("compression level {} is not in -1..9", level),
                      DataLocation{.file = name()});
    int window_bits = compression == Compression::Gzip ? 16 + MAX_WBITS : MAX_WBITS;
    int rc = deflateInit2(&z_, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc != Z_OK)
      throw DataError(DataError::Kind::Io, fmt::format("zlib deflateInit2 failed ({})", rc),
                      DataLocation{.file = name()});
  }
  ~DeflateOutputStream() override { deflateEnd(&z_); }

  void write(const void* data, size_t n) override {
    if (finished_)
      throw DataError(DataError::Kind::InvalidArgument, "write after finish", DataLocation{.file = name()});
    bytes_written_ += n;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      size_t k = std::min(n, cap_ - used_);
      std::memcpy(in_.get() + used_, p, k);
      used_ += k;
      p += k;
      n -= k;
      if (used_ == cap_) compress(Z_NO_FLUSH);
    }
  }

  void finish(bool sync) override {
    if (finished_) return;
    compress(Z_FINISH);
    finished_ = true;
    sink_->finish(sync);
  }

 private:
  // Compresses the gathered input; with Z_FINISH, also writes the stream's trailer.
  void compress(int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(in_.get());
    z_.avail_in = static_cast<uInt>(used_);
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.get());
      z_.avail_out = static_cast<uInt>(cap_);
      int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR)
        throw DataError(DataError::Kind::Io, "zlib deflate failed", DataLocation{.file = name()});
      sink_->write(out_.get(), cap_ - z_.avail_out);
      if (flush == Z_FINISH ? rc == Z_STREAM_END : (z_.avail_in == 0 && z_.avail_out != 0)) break;
    }
    used_ = 0;
  }

  std::unique_ptr<OutputStream> sink_;
  z_stream z_{};
  std::unique_ptr<char[]> in_, out_;
  size_t cap_;
  size_t used_ = 0;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<OutputStream> create_compressing_stream(std::unique_ptr<OutputStream> sink, Compression compression,
                                                        int level, size_t buffer_size) {
  if (compression == Compression::None) return sink;
  return std::make_unique<DeflateOutputStream>(std::move(sink), compression, level,
                                               buffer_size < 64 ? 64 : buffer_size);
}

}  // namespace pipec

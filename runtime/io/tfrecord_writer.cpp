#include "runtime/io/tfrecord_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "runtime/io/errors.h"
#include "runtime/io/tfrecord_format.h"

namespace pipec {
namespace {

// After a rename, the new directory entry is only durable once the directory itself is synced.
void sync_parent_directory(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the data itself is already synced
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

TFRecordWriter::TFRecordWriter(std::string path, TFRecordWriterOptions options)
    : path_(std::move(path)), options_(options) {
  auto file = create_file_stream(temp_path(), options_.buffer_size);
  temp_exists_ = true;
  try {
    stream_ = create_compressing_stream(std::move(file), options_.compression, options_.compression_level,
                                        options_.buffer_size);
  } catch (...) {
    abort();  // e.g. a bad compression level: leave no .tmp file behind
    throw;
  }
}

TFRecordWriter::~TFRecordWriter() { abort(); }

void TFRecordWriter::write(std::string_view record) {
  if (!stream_)
    throw DataError(DataError::Kind::InvalidArgument, "write to a closed TFRecordWriter", DataLocation{.file = path_});
  char header[tfrecord::kHeaderSize];
  tfrecord::encode_header(header, record.size());
  char footer[tfrecord::kFooterSize];
  store_le32(footer, crc32c_masked(record.data(), record.size()));
  stream_->write(header, sizeof header);
  stream_->write(record);
  stream_->write(footer, sizeof footer);
  ++records_;
}

void TFRecordWriter::close() {
  if (!stream_) return;
  try {
    stream_->finish(options_.sync);
    stream_.reset();
    if (std::rename(temp_path().c_str(), path_.c_str()) != 0)
      throw DataError(DataError::Kind::Io, "cannot rename " + temp_path() + " into place: " + std::strerror(errno),
                      DataLocation{.file = path_});
    temp_exists_ = false;
  } catch (...) {
    abort();
    throw;
  }
  if (options_.sync) sync_parent_directory(path_);
}

void TFRecordWriter::abort() noexcept {
  stream_.reset();  // closes the descriptor
  if (temp_exists_) ::unlink(temp_path().c_str());
  temp_exists_ = false;
}

}  // namespace pipec

// InputStream over a POSIX file descriptor, and over an in-memory string.
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/io/errors.h"
#include "runtime/io/input_stream.h"

namespace pipec {
namespace {

class FileInputStream final : public InputStream {
 public:
  FileInputStream(const std::string& path, int fd, size_t buffer_size)
      : InputStream(path, Compression::None, buffer_size), fd_(fd) {}
  ~FileInputStream() override { ::close(fd_); }

 protected:
  size_t produce(char* dst, size_t capacity) override {
    for (;;) {
      ssize_t got = ::read(fd_, dst, capacity);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno == EINTR) continue;
      throw DataError(DataError::Kind::Io, std::string("read failed: ") + std::strerror(errno),
                      DataLocation{.file = name(), .offset = static_cast<int64_t>(offset())});
    }
  }

 private:
  int fd_;
};

class MemoryInputStream final : public InputStream {
 public:
  MemoryInputStream(std::string name, std::string data, size_t buffer_size)
      : InputStream(std::move(name), Compression::None, buffer_size), data_(std::move(data)) {}

 protected:
  size_t produce(char* dst, size_t capacity) override {
    size_t k = std::min(capacity, data_.size() - next_);
    std::memcpy(dst, data_.data() + next_, k);
    next_ += k;
    return k;
  }

 private:
  std::string data_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<InputStream> open_file_stream(const std::string& path, size_t buffer_size) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int err = errno;
    auto kind = (err == ENOENT || err == ENOTDIR) ? DataError::Kind::NotFound : DataError::Kind::Io;
    throw DataError(kind, std::string("cannot open: ") + std::strerror(err), DataLocation{.file = path});
  }
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw DataError(DataError::Kind::InvalidArgument, "is a directory, not a file", DataLocation{.file = path});
  }
  // Record files are read front to back once: let the kernel read ahead aggressively.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::make_unique<FileInputStream>(path, fd, buffer_size);
}

std::unique_ptr<InputStream> open_memory_stream(std::string name, std::string data, size_t buffer_size) {
  return std::make_unique<MemoryInputStream>(std::move(name), std::move(data), buffer_size);
}

}  // namespace pipec

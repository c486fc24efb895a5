// OutputStream over a POSIX file descriptor, and over a std::string.
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "runtime/io/errors.h"
#include "runtime/io/output_stream.h"

namespace pipec {

OutputStream::~OutputStream() = default;

namespace {

[[noreturn]] void throw_io(const std::string& path, const char* what, int err) {
  throw DataError(DataError::Kind::Io, std::string(what) + ": " + std::strerror(err), DataLocation{.file = path});
}

class FileOutputStream final : public OutputStream {
 public:
  FileOutputStream(const std::string& path, int fd, size_t buffer_size)
      : OutputStream(path), fd_(fd), buf_(new char[buffer_size]), cap_(buffer_size) {}
  ~FileOutputStream() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void write(const void* data, size_t n) override {
    if (fd_ < 0) throw DataError(DataError::Kind::InvalidArgument, "write after finish", DataLocation{.file = name()});
    bytes_written_ += n;
    if (used_ + n <= cap_) {
      std::memcpy(buf_.get() + used_, data, n);
      used_ += n;
      return;
    }
    flush();
    // Big writes skip the buffer instead of being copied through it.
    if (n >= cap_) {
      write_all(static_cast<const char*>(data), n);
    } else {
      std::memcpy(buf_.get(), data, n);
      used_ = n;
    }
  }

  void finish(bool sync) override {
    if (fd_ < 0) return;
    flush();
    if (sync && ::fsync(fd_) != 0) throw_io(name(), "fsync failed", errno);
    int fd = fd_;
    fd_ = -1;
    // close() can report a delayed write error (e.g. on NFS); it must not be ignored.
    if (::close(fd) != 0) throw_io(name(), "close failed", errno);
  }

 private:
  void flush() {
    write_all(buf_.get(), used_);
    used_ = 0;
  }
  void write_all(const char* p, size_t n) {
    while (n > 0) {
      ssize_t k = ::write(fd_, p, n);
      if (k < 0) {
        if (errno == EINTR) continue;
        throw_io(name(), "write failed", errno);
      }
      p += k;
      n -= static_cast<size_t>(k);
    }
  }

  int fd_;
  std::unique_ptr<char[]> buf_;
  size_t cap_;
  size_t used_ = 0;
};

class StringOutputStream final : public OutputStream {
 public:
  StringOutputStream(std::string* out, std::string name) : OutputStream(std::move(name)), out_(out) {}
  void write(const void* data, size_t n) override {
    out_->append(static_cast<const char*>(data), n);
    bytes_written_ += n;
  }
  void finish(bool) override {}

 private:
  std::string* out_;
};

}  // namespace

std::unique_ptr<OutputStream> create_file_stream(const std::string& path, size_t buffer_size) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT)
      throw DataError(DataError::Kind::NotFound, "cannot create: the directory does not exist",
                      DataLocation{.file = path});
    throw_io(path, "cannot create", err);
  }
  return std::make_unique<FileOutputStream>(path, fd, buffer_size < 64 ? 64 : buffer_size);
}

std::unique_ptr<OutputStream> create_string_stream(std::string* out, std::string name) {
  return std::make_unique<StringOutputStream>(out, std::move(name));
}

}  // namespace pipec

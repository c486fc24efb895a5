#include "runtime/exec/checkpoint_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "runtime/core/le_codec.h"

namespace pipec {

namespace {

constexpr char kMagic[4] = {'P', 'C', 'S', 'T'};

std::string os_error(const std::filesystem::path& path, std::string_view op, int err) {
  return fmt::format("{}: {} failed: {}", path.string(), op, std::strerror(err));
}

// Closes on scope exit so every error path releases the descriptor.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  // Closes now, reporting the error: close() can be where a delayed write error shows up.
  int release_and_close() {
    const int rc = close(fd);
    fd = -1;
    return rc;
  }
};

void write_all(int fd, const char* p, size_t n, const std::filesystem::path& path) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw CheckpointError(os_error(path, "write", errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void fsync_directory(const std::filesystem::path& dir) {
  Fd d{open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0) throw CheckpointError(os_error(dir, "open directory", errno));
  if (fsync(d.fd) != 0) throw CheckpointError(os_error(dir, "fsync directory", errno));
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}", getpid());
  try {
    {
      Fd f{open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
      if (f.fd < 0) throw CheckpointError(os_error(tmp, "open", errno));
      write_all(f.fd, bytes.data(), bytes.size(), tmp);
      // Without this, the rename could reach the disk before the data: after a crash `path` would
      // exist with the new name but empty or partial content.
      if (fsync(f.fd) != 0) throw CheckpointError(os_error(tmp, "fsync", errno));
      if (f.release_and_close() != 0) throw CheckpointError(os_error(tmp, "close", errno));
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
      throw CheckpointError(os_error(path, "rename " + tmp.string() + " ->", errno));
    }
  } catch (...) {
    unlink(tmp.c_str());
    throw;
  }
  // The rename is a change to the directory; it is only durable once the directory is synced.
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  fsync_directory(dir);
}

std::string read_file(const std::filesystem::path& path) {
  Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw CheckpointError(os_error(path, "open", errno));
  struct stat st {};
  if (fstat(f.fd, &st) != 0) throw CheckpointError(os_error(path, "stat", errno));
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = read(f.fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw CheckpointError(os_error(path, "read", errno));
    }
    if (r == 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

// ---- StateWriter ----------------------------------------------------------------------------------

StateWriter::StateWriter(uint32_t version) : version_(version) {}

void StateWriter::write_u32(uint32_t v) { append_le32(payload_, v); }
void StateWriter::write_u64(uint64_t v) { append_le64(payload_, v); }
void StateWriter::write_i64(int64_t v) { append_le64(payload_, static_cast<uint64_t>(v)); }
void StateWriter::write_f64(double v) { append_le64(payload_, std::bit_cast<uint64_t>(v)); }

void StateWriter::write_string(std::string_view s) {
  write_u64(s.size());
  payload_.append(s);
}

void StateWriter::write_bytes(std::span<const uint8_t> b) {
  write_u64(b.size());
  payload_.append(reinterpret_cast<const char*>(b.data()), b.size());
}

std::string StateWriter::finish() const {
  std::string out;
  out.reserve(StateReader::kHeaderSize + payload_.size() + StateReader::kTrailerSize);
  out.append(kMagic, sizeof kMagic);
  append_le32(out, version_);
  append_le64(out, payload_.size());
  out += payload_;
  append_le32(out, crc32_zlib(out.data(), out.size()));
  return out;
}

void StateWriter::write_to_file(const std::filesystem::path& path) const { write_file_atomic(path, finish()); }

// ---- StateReader ----------------------------------------------------------------------------------

StateReader::StateReader(std::string data, std::string source) : data_(std::move(data)), source_(std::move(source)) {
  const auto* p = reinterpret_cast<const uint8_t*>(data_.data());
  if (data_.size() < kHeaderSize + kTrailerSize) {
    throw error(fmt::format("truncated state file: {} bytes, smaller than the {}-byte framing", data_.size(),
                            kHeaderSize + kTrailerSize));
  }
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    throw error("not a pipec state file (bad magic)");
  }
  version_ = load_le32(p + 4);
  const uint64_t payload_size = load_le64(p + 8);
  const uint64_t actual = data_.size() - kHeaderSize - kTrailerSize;
  if (payload_size != actual) {
    throw error(fmt::format("{} state file: header says {} payload bytes, file has {}",
                            payload_size > actual ? "truncated" : "corrupt", payload_size, actual));
  }
  const size_t crc_at = data_.size() - kTrailerSize;
  const auto stored = load_le32(p + crc_at);
  const uint32_t computed = crc32_zlib(p, crc_at);
  if (stored != computed) {
    throw error(fmt::format("corrupt state file: CRC32 mismatch (stored {:08x}, computed {:08x})", stored, computed));
  }
}

StateReader StateReader::from_file(const std::filesystem::path& path) {
  return StateReader(read_file(path), path.string());
}

CheckpointError StateReader::error(std::string_view what) const {
  return CheckpointError(fmt::format("{}: {}", source_, what));
}

const uint8_t* StateReader::take(size_t n, const char* what) {
  if (n > remaining()) {
    // The CRC matched, so the file is intact: the reader's layout disagrees with the writer's.
    throw error(
        fmt::format("state layout mismatch: reading {} needs {} bytes at payload offset {}, "
                    "only {} left (version {})",
                    what, n, pos_ - kHeaderSize, remaining(), version_));
  }
  const auto* p = reinterpret_cast<const uint8_t*>(data_.data()) + pos_;
  pos_ += n;
  return p;
}

uint32_t StateReader::read_u32() { return load_le32(take(4, "u32")); }
uint64_t StateReader::read_u64() { return load_le64(take(8, "u64")); }
int64_t StateReader::read_i64() { return static_cast<int64_t>(load_le64(take(8, "i64"))); }
double StateReader::read_f64() { return std::bit_cast<double>(load_le64(take(8, "f64"))); }

uint64_t StateReader::read_count(size_t min_element_size, const char* what) {
  const uint64_t n = read_u64();
  if (n > remaining() / min_element_size) {
    throw error(fmt::format("state layout mismatch: {} length {} exceeds the {} bytes left", what, n, remaining()));
  }
  return n;
}

std::string StateReader::read_string() {
  const uint64_t n = read_count(1, "string");
  const uint8_t* p = take(n, "string");
  return std::string(reinterpret_cast<const char*>(p), n);
}

std::vector<uint8_t> StateReader::read_bytes() {
  const uint64_t n = read_count(1, "bytes");
  const uint8_t* p = take(n, "bytes");
  return std::vector<uint8_t>(p, p + n);
}

void StateReader::expect_end() const {
  if (remaining() != 0) {
    throw error(fmt::format("state layout mismatch: {} unread payload bytes (version {})", remaining(), version_));
  }
}

}  // namespace pipec

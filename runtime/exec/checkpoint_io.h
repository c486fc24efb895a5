// Crash-safe state files for checkpoints: atomic replace on write, validated framing on read.
//
// A checkpoint that is half-written (crash, full disk, Ctrl-C) must never be mistaken for a good one,
// and a damaged one must fail loudly with the file's name instead of resuming from garbage. So files
// are replaced atomically, and the serialized form carries a magic, a length and a CRC32.
//
// State file layout (all integers little-endian, independent of the host):
//   [0,4)    magic "PCST"
//   [4,8)    u32 version      schema version chosen by the writer; the reader checks it
//   [8,16)   u64 payload size
//   [16,16+n) payload         the StateWriter fields, in order, without type tags
//   [16+n, 20+n) u32 CRC32 (zlib polynomial) of every byte before it
// Payload encodings: u32/u64/i64 fixed width; f64 as its IEEE-754 bits in a u64; string and bytes as
// a u64 length then the raw bytes; vector as a u64 count then each element.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace pipec {

/// Any failure to write, read or decode a state file. The message names the file.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Replaces `path` with `bytes` so that readers (and the file after a crash) see either the old
/// content or the new, never a mix: write `path.tmp.<pid>`, fsync it, rename it over `path`, fsync the
/// directory so the rename itself is durable. One writer per path per process at a time (the temporary
/// name is per process). Throws CheckpointError; the temporary file is removed on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

/// The whole content of `path`. Throws CheckpointError naming the path and the OS error.
std::string read_file(const std::filesystem::path& path);

/// Builds a state file in memory. Fields have no tags: the reader must read them in the same order
/// with the same types, and `version` is how a format change is detected.
class StateWriter {
 public:
  explicit StateWriter(uint32_t version);

  void write_u32(uint32_t v);
  void write_u64(uint64_t v);
  void write_i64(int64_t v);
  void write_f64(double v);
  void write_string(std::string_view s);
  void write_bytes(std::span<const uint8_t> b);
  /// Element types: uint32_t, uint64_t, int64_t, double, std::string.
  template <class T>
  void write_vector(const std::vector<T>& v) {
    write_u64(v.size());
    for (const T& x : v) write_element(x);
  }

  /// Header + payload + CRC. The writer can keep being used afterwards.
  std::string finish() const;
  /// write_file_atomic(path, finish()).
  void write_to_file(const std::filesystem::path& path) const;

 private:
  void write_element(uint32_t v) { write_u32(v); }
  void write_element(uint64_t v) { write_u64(v); }
  void write_element(int64_t v) { write_i64(v); }
  void write_element(double v) { write_f64(v); }
  void write_element(const std::string& s) { write_string(s); }

  uint32_t version_;
  std::string payload_;
};

/// Validates and decodes a state file. The constructor checks size, magic, length and CRC; every read
/// checks bounds. All failures throw CheckpointError starting with "<source>: ".
class StateReader {
 public:
  /// `source` names the data in error messages (normally the file path).
  StateReader(std::string data, std::string source);
  static StateReader from_file(const std::filesystem::path& path);

  uint32_t version() const { return version_; }
  const std::string& source() const { return source_; }

  uint32_t read_u32();
  uint64_t read_u64();
  int64_t read_i64();
  double read_f64();
  std::string read_string();
  std::vector<uint8_t> read_bytes();
  template <class T>
  std::vector<T> read_vector() {
    // Every element takes at least 4 bytes, so a corrupt count cannot trigger a huge allocation.
    const uint64_t n = read_count(4, "vector");
    std::vector<T> out;
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) out.push_back(read_element<T>());
    return out;
  }

  /// Payload bytes not read yet.
  size_t remaining() const { return data_.size() - kTrailerSize - pos_; }
  /// Throws if payload bytes are left over (the reader expected a shorter/older layout).
  void expect_end() const;
  /// A CheckpointError for a semantic problem found by the caller (e.g. an unsupported version).
  CheckpointError error(std::string_view what) const;

  static constexpr size_t kHeaderSize = 16;
  static constexpr size_t kTrailerSize = 4;

 private:
  const uint8_t* take(size_t n, const char* what);
  uint64_t read_count(size_t min_element_size, const char* what);
  template <class T>
  T read_element() {
    if constexpr (std::is_same_v<T, uint32_t>) return read_u32();
    else if constexpr (std::is_same_v<T, uint64_t>) return read_u64();
    else if constexpr (std::is_same_v<T, int64_t>) return read_i64();
    else if constexpr (std::is_same_v<T, double>) return read_f64();
    else if constexpr (std::is_same_v<T, std::string>) return read_string();
    else static_assert(sizeof(T) == 0, "unsupported vector element type");
  }

  std::string data_;
  std::string source_;
  uint32_t version_ = 0;
  size_t pos_ = kHeaderSize;  // offset into data_
};

}  // namespace pipec

// The TFRecord framing, shared by the reader and the writer. Each record is
//
//   uint64 length            little-endian
//   uint32 masked_crc32c(length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// (see crc32c.h for the masking). There is no file header, footer or index: a file is just the
// records back to back, which is why a damaged length field loses the rest of the file.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/io/crc32c.h"

namespace pipec::tfrecord {

inline constexpr size_t kHeaderSize = 12;  // length + its CRC
inline constexpr size_t kFooterSize = 4;   // data CRC

// Lengths up to 2^48 (256 TiB) are accepted; anything larger cannot be a real record and would
// overflow size arithmetic, so it is reported as corrupt even when its CRC happens to match.
inline constexpr uint64_t kMaxRecordLength = uint64_t(1) << 48;

// memcpy + (on big-endian hosts) a byte swap: compilers turn this into one load, which they do not
// reliably do for a shift-and-or loop.
inline uint64_t load_le64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline uint32_t load_le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}
inline void store_le64(char* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline void store_le32(char* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}

/// Fills the 12-byte header for a record of `length` bytes.
inline void encode_header(char* out, uint64_t length) {
  store_le64(out, length);
  store_le32(out + 8, crc32c_masked(out, 8));
}

}  // namespace pipec::tfrecord

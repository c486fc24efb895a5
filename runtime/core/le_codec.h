// Little-endian integers and the zlib CRC32: the one codec of pipec's binary formats (checkpoint state
// files, runtime/exec/checkpoint_io.h; serialized plans, runtime/plan/plan_serialize.h) and of the
// file formats it reads (TFRecord framing). Files must mean the same on every host, so multi-byte
// values are always stored least significant byte first, whatever the CPU's order.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace pipec {

// memcpy plus (on big-endian hosts) a byte swap: compilers turn these into one load or store, which
// they do not reliably do for a shift-and-or loop. Unaligned pointers are fine.
inline uint32_t load_le32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}
inline uint64_t load_le64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline void store_le32(void* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void store_le64(void* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

/// Appends `v` to `out`, 4 or 8 bytes little-endian.
inline void append_le32(std::string& out, uint32_t v) {
  char b[4];
  store_le32(b, v);
  out.append(b, 4);
}
inline void append_le64(std::string& out, uint64_t v) {
  char b[8];
  store_le64(b, v);
  out.append(b, 8);
}

/// CRC-32 with zlib's polynomial (the checksum of gzip and PNG) of `n` bytes, any length (files over
/// 4 GiB included). Not CRC32C: TFRecord's checksum is runtime/io/crc32c.h.
uint32_t crc32_zlib(const void* data, size_t n);

}  // namespace pipec

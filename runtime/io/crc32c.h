// CRC32C (Castagnoli polynomial), the checksum TFRecord files use, and TFRecord's masked form.
//
// `crc32c_extend` picks, once per process, three interleaved chains of the SSE4.2 `crc32` instruction
// when the CPU has it and PCLMULQDQ (crc32c_sse42_3way.cpp), one chain of it with SSE4.2 alone, and a
// table-driven (slicing-by-8) fallback otherwise; all are exposed so tests can check they agree and
// bench/crc32c can time them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pipec {

/// The CRC32C of the concatenation of the bytes `crc` was computed over and data[0, n).
/// Pass crc = 0 to start.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

inline uint32_t crc32c(const void* data, size_t n) { return crc32c_extend(0, data, n); }
inline uint32_t crc32c(std::string_view s) { return crc32c_extend(0, s.data(), s.size()); }

/// The implementations behind crc32c_extend. crc32c_extend_sse42 must only be called when
/// crc32c_have_sse42() is true, crc32c_extend_sse42_3way only when crc32c_have_sse42_clmul() is.
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n);
uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t n);
uint32_t crc32c_extend_sse42_3way(uint32_t crc, const void* data, size_t n);
bool crc32c_have_sse42();
bool crc32c_have_sse42_clmul();

// TFRecord stores CRCs "masked": a CRC over bytes that themselves contain CRCs is weak, so the
// stored value is rotated and offset. The constant is part of the file format.
inline constexpr uint32_t kCrc32cMaskDelta = 0xa282ead8u;

inline uint32_t crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta; }
inline uint32_t crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - kCrc32cMaskDelta;
  return (rot >> 17) | (rot << 15);
}
/// The masked CRC32C of data[0, n), as stored in TFRecord headers and footers.
inline uint32_t crc32c_masked(const void* data, size_t n) { return crc32c_mask(crc32c(data, n)); }

}  // namespace pipec

// CRC32C with the SSE4.2 `crc32` instruction (8 bytes per instruction). This file alone is built
// with -msse4.2; nothing here may run unless crc32c_have_sse42() said yes.
#include <cstring>

#include "runtime/io/crc32c.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#endif

namespace pipec {

#if defined(__x86_64__) || defined(__i386__)

uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__)
  uint64_t c64 = c;
  while (n >= 32) {
    uint64_t w[4];
    std::memcpy(w, p, sizeof w);  // unaligned-safe; compiles to plain loads
    c64 = _mm_crc32_u64(c64, w[0]);
    c64 = _mm_crc32_u64(c64, w[1]);
    c64 = _mm_crc32_u64(c64, w[2]);
    c64 = _mm_crc32_u64(c64, w[3]);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
#endif
  while (n >= 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    c = _mm_crc32_u32(c, w);
    p += 4;
    n -= 4;
  }
  while (n--) c = _mm_crc32_u8(c, *p++);
  return ~c;
}

#else

// Not an x86 CPU: crc32c_have_sse42() is false, so this is never chosen; keep it correct anyway.
uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t n) { return crc32c_extend_portable(crc, data, n); }

#endif

}  // namespace pipec

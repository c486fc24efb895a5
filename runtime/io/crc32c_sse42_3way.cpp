// CRC32C with three interleaved chains of the SSE4.2 `crc32` instruction, joined with PCLMULQDQ. This
// file alone is built with -msse4.2 -mpclmul; nothing here may run unless crc32c_have_sse42_clmul()
// said yes.
//
// The instruction has a latency of 3 cycles and a throughput of 1 per cycle, so the single chain of
// crc32c_sse42.cpp uses a third of what the CPU can do. Here three chains run at once over three
// adjacent blocks of B bytes each. CRC is linear: with s_A the register state after block A (started
// from the running state) and s_B, s_C the states after blocks B and C started from 0,
//
//   state after A B C = s_A * x^(8*2B) + s_B * x^(8*B) + s_C      (mod P, the Castagnoli polynomial)
//
// The multiplications by x^(8n) are one carry-less multiply by a constant and one `crc32` of the
// product (which reduces it modulo P), a dozen cycles, paid once per round.
#include <array>
#include <cstring>

#include "runtime/io/crc32c.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#endif

namespace pipec {

#if defined(__x86_64__)

namespace {

constexpr uint32_t kPolyReflected = 0x82f63b78u;  // Castagnoli, bit-reversed
// Blocks of this size while a whole round of three is left; the last round's blocks are whatever
// multiple of 8 splits the rest in three.
constexpr size_t kBlock = 1024;
// Below this, the join costs more than the interleaving saves: one chain.
constexpr size_t kMinInterleaved = 64;

// kShift[m] = x^(64m - 33) mod P, bit-reversed like the register (bit 31 is x^0). Multiplying a state
// by it carry-lessly gives a 63-bit product that, read as a 64-bit message, stands for state *
// x^(64m - 32); `crc32` of that message from 0 multiplies by x^32 and reduces, so the result is
// state * x^(64m), the state after m more zero words of 8 bytes.
constexpr std::array<uint32_t, 2 * kBlock / 8 + 1> make_shift_constants() {
  std::array<uint32_t, 2 * kBlock / 8 + 1> k{};
  uint32_t r = 0x80000000u;  // x^0
  auto times_x = [](uint32_t v) { return (v >> 1) ^ ((v & 1) ? kPolyReflected : 0); };
  for (int i = 0; i < 31; ++i) r = times_x(r);  // x^31 = x^(64*1 - 33)
  k[1] = r;
  for (size_t m = 2; m < k.size(); ++m) {
    for (int i = 0; i < 64; ++i) r = times_x(r);
    k[m] = r;
  }
  return k;
}
constexpr auto kShift = make_shift_constants();

// state * x^(64 * words) mod P, for 1 <= words <= 2 * kBlock / 8.
inline uint32_t shift_words(uint32_t state, size_t words) {
  const __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(state)),
                                               _mm_cvtsi32_si128(static_cast<int>(kShift[words])), 0);
  return static_cast<uint32_t>(_mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(product))));
}

inline uint64_t load64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);  // unaligned-safe; compiles to a plain load
  return w;
}

// One round: three chains over p[0, 3 * block), block a multiple of 8; returns the state after it.
inline uint32_t three_blocks(uint32_t state, const uint8_t* p, size_t block) {
  uint64_t a = state, b = 0, c = 0;
  for (size_t i = 0; i < block; i += 8) {
    a = _mm_crc32_u64(a, load64(p + i));
    b = _mm_crc32_u64(b, load64(p + block + i));
    c = _mm_crc32_u64(c, load64(p + 2 * block + i));
  }
  return shift_words(static_cast<uint32_t>(a), 2 * block / 8) ^ shift_words(static_cast<uint32_t>(b), block / 8) ^
         static_cast<uint32_t>(c);
}

}  // namespace

uint32_t crc32c_extend_sse42_3way(uint32_t crc, const void* data, size_t n) {
  if (n < kMinInterleaved) return crc32c_extend_sse42(crc, data, n);
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t state = ~crc;
  while (n >= 3 * kBlock) {
    state = three_blocks(state, p, kBlock);
    p += 3 * kBlock;
    n -= 3 * kBlock;
  }
  const size_t block = n / 24 * 8;
  if (block > 0) {
    state = three_blocks(state, p, block);
    p += 3 * block;
    n -= 3 * block;
  }
  // The rest (under 24 bytes) on one chain; crc32c_extend_sse42 takes and returns the inverted form.
  return crc32c_extend_sse42(~state, p, n);
}

#else

// Not x86-64: crc32c_have_sse42_clmul() is false, so this is never chosen; keep it correct anyway.
uint32_t crc32c_extend_sse42_3way(uint32_t crc, const void* data, size_t n) {
  return crc32c_extend_portable(crc, data, n);
}

#endif

}  // namespace pipec

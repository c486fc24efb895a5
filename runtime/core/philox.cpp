#include "runtime/core/philox.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PIPEC_PHILOX_AVX2 1
#endif

namespace pipec {

namespace {

constexpr uint32_t kMul0 = 0xD2511F53;
constexpr uint32_t kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85;  // sqrt(3) - 1

inline PhiloxCounter philox_round(const PhiloxCounter& c, const PhiloxKey& k) {
  const uint64_t p0 = uint64_t{kMul0} * c[0];
  const uint64_t p1 = uint64_t{kMul1} * c[2];
  const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  counter = philox_round(counter, key);
  for (int r = 1; r < 10; ++r) {
    // The key schedule is a Weyl sequence: bumped between rounds, not before the first.
    key[0] += kWeyl0;
    key[1] += kWeyl1;
    counter = philox_round(counter, key);
  }
  return counter;
}

namespace {

// Blocks side by side with AVX2, eight to a vector, one vector per counter word (lane j = block j).
// The compiler does not vectorize the one-block rounds by itself (x86 has no 32-bit high-half
// multiply), so this spells out what they do: vpmuludq multiplies the even 32-bit lanes into 64-bit
// products, a second one the odd lanes shifted down, and blends put the low and high halves back into
// 32-bit lanes. Each round depends on the last, so G independent groups of eight go through the
// rounds together to keep the multipliers busy.
#ifdef PIPEC_PHILOX_AVX2
#define PIPEC_AVX2 __attribute__((target("avx2")))

struct Words8 {
  __m256i w[4];
};

// Blocks 0-7 at `in` (array of blocks) into one vector per word, and back.
PIPEC_AVX2 inline Words8 load_blocks8(const PhiloxCounter* in) {
  const auto* p = reinterpret_cast<const __m256i*>(in);
  const __m256i l0 = _mm256_loadu_si256(p), l1 = _mm256_loadu_si256(p + 1);  // blocks 0 1, 2 3
  const __m256i l2 = _mm256_loadu_si256(p + 2), l3 = _mm256_loadu_si256(p + 3);
  const __m256i u0 = _mm256_permute2x128_si256(l0, l2, 0x20);  // blocks 0 | 4
  const __m256i u1 = _mm256_permute2x128_si256(l0, l2, 0x31);  // 1 | 5
  const __m256i u2 = _mm256_permute2x128_si256(l1, l3, 0x20);  // 2 | 6
  const __m256i u3 = _mm256_permute2x128_si256(l1, l3, 0x31);  // 3 | 7
  const __m256i t0 = _mm256_unpacklo_epi32(u0, u1);            // w0 of 0 1, w1 of 0 1 | same of 4 5
  const __m256i t1 = _mm256_unpackhi_epi32(u0, u1);            // w2, w3 of 0 1 | of 4 5
  const __m256i t2 = _mm256_unpacklo_epi32(u2, u3);
  const __m256i t3 = _mm256_unpackhi_epi32(u2, u3);
  return {{_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2), _mm256_unpacklo_epi64(t1, t3),
           _mm256_unpackhi_epi64(t1, t3)}};
}

PIPEC_AVX2 inline void store_blocks8(const Words8& c, PhiloxCounter* out) {
  const __m256i t0 = _mm256_unpacklo_epi32(c.w[0], c.w[1]);  // w0 w1 of blocks 0 1 | 4 5
  const __m256i t1 = _mm256_unpackhi_epi32(c.w[0], c.w[1]);  // of 2 3 | 6 7
  const __m256i t2 = _mm256_unpacklo_epi32(c.w[2], c.w[3]);
  const __m256i t3 = _mm256_unpackhi_epi32(c.w[2], c.w[3]);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2);  // block 0 | 4
  const __m256i u1 = _mm256_unpackhi_epi64(t0, t2);  // 1 | 5
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3);  // 2 | 6
  const __m256i u3 = _mm256_unpackhi_epi64(t1, t3);  // 3 | 7
  auto* p = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(p, _mm256_permute2x128_si256(u0, u1, 0x20));
  _mm256_storeu_si256(p + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
  _mm256_storeu_si256(p + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
  _mm256_storeu_si256(p + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
}

// The ten rounds on G groups of eight blocks.
template <int G>
PIPEC_AVX2 inline void philox_rounds_avx2(Words8 (&c)[G], PhiloxKey key) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kMul0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kMul1));
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    const __m256i k0 = _mm256_set1_epi32(static_cast<int>(key[0]));
    const __m256i k1 = _mm256_set1_epi32(static_cast<int>(key[1]));
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      __m256i* w = c[g].w;
      // 64-bit products of the even lanes, and of the odd lanes (shifted down into the even places).
      const __m256i p0e = _mm256_mul_epu32(w[0], m0);
      const __m256i p0o = _mm256_mul_epu32(_mm256_srli_epi64(w[0], 32), m0);
      const __m256i p1e = _mm256_mul_epu32(w[2], m1);
      const __m256i p1o = _mm256_mul_epu32(_mm256_srli_epi64(w[2], 32), m1);
      // Low halves: even lanes from the even products' low words, odd lanes from the odd products'
      // low words moved up; high halves the other way round.
      const __m256i lo0 = _mm256_blend_epi32(p0e, _mm256_slli_epi64(p0o, 32), 0xAA);
      const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(p0e, 32), p0o, 0xAA);
      const __m256i lo1 = _mm256_blend_epi32(p1e, _mm256_slli_epi64(p1o, 32), 0xAA);
      const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(p1e, 32), p1o, 0xAA);
      // As philox_round: {hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0}.
      w[0] = _mm256_xor_si256(_mm256_xor_si256(hi1, w[1]), k0);
      w[1] = lo1;
      w[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, w[3]), k1);
      w[3] = lo0;
    }
  }
}

// G * 8 blocks.
template <int G>
PIPEC_AVX2 void philox_blocks_avx2(const PhiloxCounter* in, PhiloxCounter* out, const PhiloxKey& key) {
  Words8 c[G];
  for (int g = 0; g < G; ++g) c[g] = load_blocks8(in + 8 * g);
  philox_rounds_avx2<G>(c, key);
  for (int g = 0; g < G; ++g) store_blocks8(c[g], out + 8 * g);
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

}  // namespace

void philox4x32_10_many(const PhiloxCounter* counters, PhiloxCounter* out, size_t n, const PhiloxKey& key) {
  size_t j = 0;
#ifdef PIPEC_PHILOX_AVX2
  if (have_avx2()) {
    for (; j + 32 <= n; j += 32) philox_blocks_avx2<4>(counters + j, out + j, key);
    for (; j + 8 <= n; j += 8) philox_blocks_avx2<1>(counters + j, out + j, key);
    if (n - j >= 4) {  // the rest, padded to eight; fewer blocks go faster one at a time
      PhiloxCounter pad[8] = {};
      std::copy(counters + j, counters + n, pad);
      philox_blocks_avx2<1>(pad, pad, key);
      std::copy(pad, pad + (n - j), out + j);
      return;
    }
  }
#endif
  for (; j < n; ++j) out[j] = philox4x32_10(counters[j], key);
}

PhiloxKey RandomStream::derive_key(uint64_t seed, uint64_t op_id, uint64_t epoch) {
  const PhiloxCounter in{static_cast<uint32_t>(op_id), static_cast<uint32_t>(op_id >> 32),
                         static_cast<uint32_t>(epoch >> 32), kKeyDomain};
  const PhiloxCounter out = philox4x32_10(in, {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return {out[0], out[1]};
}

RandomStream::RandomStream(uint64_t seed, uint64_t op_id, uint64_t element_index, uint64_t epoch)
    : key_(derive_key(seed, op_id, epoch)),
      counter_{static_cast<uint32_t>(element_index), static_cast<uint32_t>(element_index >> 32),
               static_cast<uint32_t>(epoch), 0} {}

RandomStream::RandomStream(const PhiloxKey& key, uint64_t element_index, uint64_t epoch)
    : key_(key),
      counter_{static_cast<uint32_t>(element_index), static_cast<uint32_t>(element_index >> 32),
               static_cast<uint32_t>(epoch), 0} {}

RandomStream::RandomStream(const PhiloxKey& key, uint64_t element_index, uint64_t epoch,
                           const PhiloxCounter& first_block)
    : RandomStream(key, element_index, epoch) {
  std::copy(first_block.begin(), first_block.end(), words_.begin());
  end_ = 4;
  counter_[3] = 1;
}

void RandomStream::first_blocks(const PhiloxKey& key, uint64_t first_element, uint64_t epoch, PhiloxCounter* out,
                                size_t n) {
  for (size_t j = 0; j < n; ++j) {
    const uint64_t e = first_element + j;
    out[j] = {static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32), static_cast<uint32_t>(epoch), 0};
  }
  philox4x32_10_many(out, out, n, key);
}

RandomStream RandomStream::at_block(const PhiloxKey& key, const PhiloxCounter& counter) {
  RandomStream s;
  s.key_ = key;
  s.counter_ = counter;
  return s;
}

void RandomStream::refill() {
  constexpr uint32_t kLast = std::numeric_limits<uint32_t>::max();
  if (counter_[3] == kLast) {
    // Wrapping would silently repeat the stream from block 0.
    throw std::length_error("RandomStream: exhausted 2^32 blocks for one element");
  }
  // As many blocks as the stream has used so far (1, 1, 2, 4, then kRefillBlocks), so at most about
  // half of what is made goes unused; and never block 2^32 - 1: the stream ends before it.
  const uint32_t n =
      std::min({static_cast<uint32_t>(kRefillBlocks), std::max<uint32_t>(counter_[3], 1), kLast - counter_[3]});
  std::array<PhiloxCounter, kRefillBlocks> blocks;
  for (uint32_t j = 0; j < n; ++j) {
    blocks[j] = counter_;
    blocks[j][3] += j;
  }
  philox4x32_10_many(blocks.data(), blocks.data(), n, key_);
  for (uint32_t j = 0; j < n; ++j) std::copy(blocks[j].begin(), blocks[j].end(), words_.begin() + 4 * j);
  counter_[3] += n;
  used_ = 0;
  end_ = static_cast<int>(4 * n);
}

uint32_t RandomStream::next_u32() {
  if (used_ == end_) refill();
  return words_[used_++];
}

uint64_t RandomStream::next_u64() {
  const uint64_t lo = next_u32();
  const uint64_t hi = next_u32();
  return lo | (hi << 32);
}

float RandomStream::uniform_float() { return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f; }

double RandomStream::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

int64_t RandomStream::uniform_int(int64_t lo, int64_t hi) {
  if (lo > hi) throw std::invalid_argument("RandomStream::uniform_int: lo > hi");
  // Work in unsigned arithmetic: hi - lo can exceed INT64_MAX.
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // n - 1
  uint64_t offset;
  if (span <= std::numeric_limits<uint32_t>::max()) {
    const uint64_t n = span + 1;  // 1 .. 2^32
    if (n == (uint64_t{1} << 32)) {
      offset = next_u32();
    } else {
      // 2^32 mod n values at the bottom would give the low residues one extra preimage; skip them.
      const auto n32 = static_cast<uint32_t>(n);
      const uint32_t reject_below = static_cast<uint32_t>(-n32) % n32;
      uint32_t x;
      do x = next_u32();
      while (x < reject_below);
      offset = x % n32;
    }
  } else if (span == std::numeric_limits<uint64_t>::max()) {
    offset = next_u64();
  } else {
    const uint64_t n = span + 1;
    const uint64_t reject_below = (0 - n) % n;  // 2^64 mod n
    uint64_t x;
    do x = next_u64();
    while (x < reject_below);
    offset = x % n;
  }
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + offset);
}

double RandomStream::normal(double mean, double stddev) {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return mean + stddev * spare_normal_;
  }
  // u1 in (0, 1] so log(u1) is finite.
  const double u1 = 1.0 - uniform_double();
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_normal_ = r * std::sin(theta);
  has_spare_normal_ = true;
  return mean + stddev * (r * std::cos(theta));
}

UniformBelow::UniformBelow(uint64_t n) : n_(n), fits_(n >= 1 && n <= std::numeric_limits<uint32_t>::max()) {
  if (!fits_) return;
  const auto n32 = static_cast<uint32_t>(n);
  reject_below_ = static_cast<uint32_t>(-n32) % n32;  // as uniform_int: 2^32 mod n
  reciprocal_ = std::numeric_limits<uint64_t>::max() / n + 1;
}

}  // namespace pipec

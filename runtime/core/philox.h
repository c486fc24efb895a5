// Philox4x32-10 counter-based RNG and the per-element RandomStream built on it.
//
// Why counter-based: a pipeline draws random numbers for element i on whatever thread happens to run
// it. With a sequential generator the value would depend on scheduling; with Philox the value is a
// pure function of (key, counter), so element i always gets the same numbers no matter how many
// threads there are or which other elements were processed first.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace pipec {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// One Philox4x32 block with 10 rounds (Salmon et al., SC'11; matches Random123's philox4x32_10).
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

/// out[j] = philox4x32_10(counters[j], key) for j < n, bit for bit (`out` may be `counters`). On a CPU
/// with AVX2 the blocks go through the rounds eight to a vector (32 at a time where there are that
/// many), several times faster per block than one at a time; fewer than four go one at a time.
void philox4x32_10_many(const PhiloxCounter* counters, PhiloxCounter* out, size_t n, const PhiloxKey& key);

/// A deterministic stream of random numbers for one (seed, op, element, epoch).
///
/// Mapping onto Philox (this is a reproducibility contract: changing it changes every pipeline's
/// output, so tests pin it):
///   key     = first two words of philox4x32_10({op_id lo, op_id hi, epoch hi, kKeyDomain},
///                                              {seed lo, seed hi})
///   counter = {element_index lo, element_index hi, epoch lo, draw_block}
/// The key derivation is itself a Philox call so that (seed, op_id) pairs that differ in a single bit
/// still get unrelated keys; the 128 input bits of seed and op_id cannot fit in a 64-bit key
/// verbatim. draw_block starts at 0 and increments each time the 4 words of a block are used up; a
/// stream throws std::length_error rather than wrap after 2^32 - 1 blocks (about 2^34 u32 values).
///
/// next_u32/next_u64/uniform_float/uniform_double/uniform_int are bit-exact on every platform.
/// normal() goes through std::log/std::cos, so it is exact only for a given libm.
class RandomStream {
 public:
  /// Domain-separation constant for key derivation ("key1" in ASCII).
  static constexpr uint32_t kKeyDomain = 0x6b657931;

  RandomStream(uint64_t seed, uint64_t op_id, uint64_t element_index, uint64_t epoch = 0);
  /// The same stream with the key already derived (derive_key(seed, op_id, epoch)): a stage that makes
  /// one stream per element derives the key once instead of once per element.
  RandomStream(const PhiloxKey& key, uint64_t element_index, uint64_t epoch);

  /// The same stream again, with its first block already computed by first_blocks(): a stage that draws
  /// a little for each of many elements computes their first blocks together.
  RandomStream(const PhiloxKey& key, uint64_t element_index, uint64_t epoch, const PhiloxCounter& first_block);

  /// The Philox key used for (seed, op_id, epoch); see the class comment.
  static PhiloxKey derive_key(uint64_t seed, uint64_t op_id, uint64_t epoch);

  /// out[j] = the first block of the stream (key, first_element + j, epoch), for j < n.
  static void first_blocks(const PhiloxKey& key, uint64_t first_element, uint64_t epoch, PhiloxCounter* out, size_t n);

  /// A stream whose next draw is the first word of block `counter` (key and counter as the class
  /// comment maps them, counter[3] the block): resumes a stream whose counter() was saved at a block
  /// boundary, and lets tests reach the 2^32 - 1 block limit.
  static RandomStream at_block(const PhiloxKey& key, const PhiloxCounter& counter);

  uint32_t next_u32();
  /// Two consecutive u32 draws, the first one in the low half.
  uint64_t next_u64();

  /// Uniform in [0, 1): the top 24 bits of a u32 times 2^-24. Every result is exactly representable
  /// in a float (24-bit significand), so rounding can never produce 1.0f; scaling all 32 bits by
  /// 2^-32 would round values near 2^32 up to exactly 1.0f.
  float uniform_float();
  /// Uniform in [0, 1) with 53 random bits (top 53 bits of next_u64() times 2^-53), same reasoning.
  double uniform_double();

  /// Uniform integer in the inclusive range [lo, hi] (requires lo <= hi; full int64 range allowed).
  /// Unbiased: draws that fall into the incomplete last copy of the range are rejected and redrawn,
  /// instead of taking `x % n`, which favours small values when n does not divide 2^32 (or 2^64).
  /// Ranges of up to 2^32 values consume u32 draws, larger ones u64 draws.
  int64_t uniform_int(int64_t lo, int64_t hi);

  /// Normal(mean, stddev) by the Box-Muller transform. Each transform yields two independent normals;
  /// the second is kept and returned by the next call.
  double normal(double mean = 0.0, double stddev = 1.0);

  const PhiloxKey& key() const { return key_; }
  /// The counter of the next block to hand out: counter()[3] is the number of blocks the stream has
  /// drawn words from.
  PhiloxCounter counter() const {
    PhiloxCounter c = counter_;
    c[3] -= static_cast<uint32_t>((end_ - used_) / 4);  // generated blocks not yet started
    return c;
  }

 private:
  /// The most blocks one refill makes. A refill makes as many as the stream has used (one first: most
  /// streams, a shuffle's slot or a crop window, need no more), doubling up to this many: a stream
  /// that draws many values (a random tensor, an initializer) gets them eight blocks at a time, which
  /// philox4x32_10_many makes about as fast as two.
  static constexpr int kRefillBlocks = 8;

  RandomStream() = default;
  void refill();

  PhiloxKey key_{};
  PhiloxCounter counter_{};  // the counter of the next block to generate
  // Left uninitialized: a stream makes one per element, and no word is read before it is generated.
  std::array<uint32_t, 4 * kRefillBlocks> words_;
  int used_ = 0;  // words of words_ already handed out
  int end_ = 0;   // words of words_ generated; used_ == end_: need new blocks
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

/// RandomStream::uniform_int(0, n - 1) for many streams and one n, from each stream's first word: the
/// same value, without the stream object or its two divisions per draw (the divisor's remainder of
/// 2^32 and a reciprocal are worked out once). A shuffle draws one slot per element this way.
class UniformBelow {
 public:
  /// n >= 1. Past 2^32 - 1 (where uniform_int draws 64-bit words) every draw is left to the stream.
  explicit UniformBelow(uint64_t n);
  uint64_t n() const { return n_; }
  /// The draw of a stream whose first u32 is `x`; -1 when that stream rejects `x` and draws again
  /// (probability below n / 2^32), or when n is past 2^32 - 1: then draw from the stream itself.
  int64_t from_first_word(uint32_t x) const {
    if (!fits_ || x < reject_below_) return -1;
    // x % n by a multiplication (exact for every 32-bit x and n: Lemire, Kaser and Kurz, "Faster
    // remainder by direct computation", 2019).
    const uint64_t low = reciprocal_ * x;
    return static_cast<int64_t>((static_cast<unsigned __int128>(low) * n_) >> 64);
  }

 private:
  uint64_t n_;
  bool fits_;
  uint32_t reject_below_ = 0;
  uint64_t reciprocal_ = 0;  // ceil(2^64 / n)
};

}  // namespace pipec

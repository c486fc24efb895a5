#include "runtime/core/philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace pipec {
namespace {

// Known-answer vectors published with Random123 (kat_vectors, philox4x32_10).
TEST(Philox, KnownAnswerZero) {
  const PhiloxCounter out = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out, (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, KnownAnswerAllOnes) {
  const PhiloxCounter out = philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff});
  EXPECT_EQ(out, (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(Philox, KnownAnswerPi) {
  const PhiloxCounter out = philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0});
  EXPECT_EQ(out, (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// philox4x32_10_many (vectorized on AVX2 machines) is the one-block function, bit for bit: random keys
// and counters, every group size and tail, counter words at their extremes, and out == counters.
TEST(Philox, ManyMatchesOneBlock) {
  std::mt19937_64 gen(12345);
  const uint32_t extremes[] = {0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = static_cast<size_t>(trial % 37);
    const PhiloxKey key{static_cast<uint32_t>(gen()), static_cast<uint32_t>(gen())};
    std::vector<PhiloxCounter> in(n), out(n);
    for (PhiloxCounter& c : in)
      for (uint32_t& w : c) w = gen() % 4 == 0 ? extremes[gen() % 6] : static_cast<uint32_t>(gen());
    philox4x32_10_many(in.data(), out.data(), n, key);
    for (size_t j = 0; j < n; ++j) ASSERT_EQ(out[j], philox4x32_10(in[j], key)) << "trial " << trial << " block " << j;
    std::vector<PhiloxCounter> same = in;
    philox4x32_10_many(same.data(), same.data(), n, key);
    EXPECT_EQ(same, out) << "trial " << trial;
  }
}

// The words a stream hands out are blocks 0, 1, 2, ... of its counter in order, however many blocks
// each refill makes; counter() counts the blocks drawn from.
TEST(PhiloxRandomStream, WordsAreConsecutiveBlocks) {
  std::mt19937_64 gen(99);
  for (int trial = 0; trial < 20; ++trial) {
    const uint64_t seed = gen(), op = gen(), element = gen(), epoch = gen();
    RandomStream s(seed, op, element, epoch);
    const PhiloxKey key = RandomStream::derive_key(seed, op, epoch);
    const PhiloxCounter base{static_cast<uint32_t>(element), static_cast<uint32_t>(element >> 32),
                             static_cast<uint32_t>(epoch), 0};
    EXPECT_EQ(s.counter(), base);
    for (uint32_t b = 0; b < 40; ++b) {
      PhiloxCounter c = base;
      c[3] = b;
      const PhiloxCounter block = philox4x32_10(c, key);
      for (int w = 0; w < 4; ++w) {
        ASSERT_EQ(s.next_u32(), block[static_cast<size_t>(w)]) << "trial " << trial << " block " << b;
        EXPECT_EQ(s.counter()[3], b + 1);
        EXPECT_EQ(s.counter()[0], base[0]);
      }
    }
  }
}

// The stream ends after block 2^32 - 2, the last one it may use, wherever a refill starts.
TEST(PhiloxRandomStream, ThrowsAtTheBlockLimit) {
  const PhiloxKey key{0x01234567, 0x89abcdef};
  constexpr uint32_t kLast = std::numeric_limits<uint32_t>::max();
  for (uint32_t left : {0u, 1u, 2u, 7u, 8u, 9u, 13u}) {
    const PhiloxCounter start{5, 6, 7, kLast - left};
    RandomStream s = RandomStream::at_block(key, start);
    EXPECT_EQ(s.counter(), start);
    for (uint32_t b = 0; b < left; ++b) {
      PhiloxCounter c = start;
      c[3] += b;
      const PhiloxCounter block = philox4x32_10(c, key);
      for (uint32_t w : block) ASSERT_EQ(s.next_u32(), w) << left << " blocks left, block " << b;
    }
    EXPECT_EQ(s.counter()[3], kLast);
    EXPECT_THROW(s.next_u32(), std::length_error) << left << " blocks left";
  }
}

// first_blocks() and the constructor that takes a first block give the plain stream exactly, across
// the carry of the element index into its high word.
TEST(PhiloxRandomStream, FirstBlocksMatchThePlainStream) {
  const PhiloxKey key = RandomStream::derive_key(11, 22, 33);
  for (uint64_t first : {uint64_t{0}, uint64_t{0xfffffff0}, uint64_t{0x123456789}}) {
    std::vector<PhiloxCounter> blocks(29);
    RandomStream::first_blocks(key, first, 33, blocks.data(), blocks.size());
    for (size_t j = 0; j < blocks.size(); ++j) {
      RandomStream plain(key, first + j, 33);
      RandomStream given(key, first + j, 33, blocks[j]);
      EXPECT_EQ(given.counter(), plain.counter());
      RandomStream check(key, first + j, 33);
      for (uint32_t w : blocks[j]) ASSERT_EQ(w, check.next_u32());
      for (int w = 0; w < 50; ++w) {
        ASSERT_EQ(given.next_u32(), plain.next_u32()) << "element " << first + j << " word " << w;
        ASSERT_EQ(given.counter(), plain.counter());
      }
      EXPECT_EQ(given.uniform_int(-5, 1000000), plain.uniform_int(-5, 1000000));
    }
  }
}

// UniformBelow gives uniform_int(0, n - 1) from a stream's first word, or says that the stream rejects
// it: for small, odd, power-of-two, near-2^32 and random n, over many streams (n = 2^31 + 1 rejects
// about half of the words, so both branches run), and its remainder against `%` on random words.
TEST(PhiloxRandomStream, UniformBelowIsUniformIntFromTheFirstWord) {
  const PhiloxKey key = RandomStream::derive_key(5, 6, 7);
  std::mt19937_64 pick(3);
  std::vector<uint64_t> ns = {1, 2, 3, 7, 10000, 65536, 99991, (uint64_t{1} << 31) + 1, 0xfffffffeull, 0xffffffffull};
  for (int k = 0; k < 20; ++k) ns.push_back(1 + pick() % 0xffffffffull);
  for (uint64_t n : ns) {
    const UniformBelow below(n);
    const uint64_t reject_below = (uint64_t{1} << 32) % n;
    int taken = 0, left = 0;
    for (uint64_t e = 0; e < 2000; ++e) {
      RandomStream stream(key, e, 7);
      const uint32_t x = RandomStream(key, e, 7).next_u32();
      const int64_t got = below.from_first_word(x);
      ASSERT_EQ(got < 0, x < reject_below) << "n " << n << " x " << x;
      const int64_t want = stream.uniform_int(0, static_cast<int64_t>(n) - 1);
      if (got >= 0) {
        ASSERT_EQ(got, want) << "n " << n << " element " << e;
        ++taken;
      } else {
        ++left;
      }
    }
    if (n == (uint64_t{1} << 31) + 1) {
      EXPECT_GT(taken, 800);
      EXPECT_GT(left, 800);
    }
    for (int k = 0; k < 20000; ++k) {
      const auto x = static_cast<uint32_t>(pick());
      if (x >= reject_below) {
        ASSERT_EQ(static_cast<uint64_t>(below.from_first_word(x)), x % n) << n << " " << x;
      }
    }
    EXPECT_EQ(below.from_first_word(0xffffffffu), static_cast<int64_t>(0xffffffffull % n));
  }
  // Past 2^32 - 1 uniform_int draws 64-bit words: always the stream's.
  EXPECT_EQ(UniformBelow(uint64_t{1} << 32).from_first_word(12345), -1);
  EXPECT_EQ(UniformBelow(uint64_t{1} << 40).from_first_word(0xffffffffu), -1);
}

// The documented (seed, op_id, element_index, epoch) -> (key, counter) mapping is a reproducibility
// contract; spell it out independently of RandomStream's implementation.
TEST(PhiloxRandomStream, MappingMatchesDocumentation) {
  const uint64_t seed = 0x0123456789abcdefULL, op = 0xfedcba9876543210ULL;
  const uint64_t element = 0x1111222233334444ULL, epoch = 0x5555666677778888ULL;

  const PhiloxCounter key_block =
      philox4x32_10({0x76543210, 0xfedcba98, 0x55556666, RandomStream::kKeyDomain}, {0x89abcdef, 0x01234567});
  const PhiloxKey key{key_block[0], key_block[1]};
  EXPECT_EQ(RandomStream::derive_key(seed, op, epoch), key);

  RandomStream s(seed, op, element, epoch);
  EXPECT_EQ(s.key(), key);
  const PhiloxCounter block0 = philox4x32_10({0x33334444, 0x11112222, 0x77778888, 0}, key);
  const PhiloxCounter block1 = philox4x32_10({0x33334444, 0x11112222, 0x77778888, 1}, key);
  for (uint32_t w : block0) EXPECT_EQ(s.next_u32(), w);
  for (uint32_t w : block1) EXPECT_EQ(s.next_u32(), w);
  EXPECT_EQ(s.counter()[3], 2u);
}

TEST(PhiloxRandomStream, EveryInputBitMatters) {
  const auto first = [](uint64_t seed, uint64_t op, uint64_t elem, uint64_t epoch) {
    RandomStream s(seed, op, elem, epoch);
    return s.next_u64();
  };
  const uint64_t base = first(1, 2, 3, 4);
  EXPECT_EQ(base, first(1, 2, 3, 4));
  for (int bit : {0, 31, 32, 63}) {
    const uint64_t flip = uint64_t{1} << bit;
    EXPECT_NE(base, first(1 ^ flip, 2, 3, 4)) << "seed bit " << bit;
    EXPECT_NE(base, first(1, 2 ^ flip, 3, 4)) << "op bit " << bit;
    EXPECT_NE(base, first(1, 2, 3 ^ flip, 4)) << "element bit " << bit;
    EXPECT_NE(base, first(1, 2, 3, 4 ^ flip)) << "epoch bit " << bit;
  }
}

TEST(PhiloxRandomStream, NextU64IsTwoU32LowFirst) {
  RandomStream a(7, 8, 9), b(7, 8, 9);
  for (int i = 0; i < 10; ++i) {
    const uint64_t lo = a.next_u32(), hi = a.next_u32();
    EXPECT_EQ(b.next_u64(), lo | (hi << 32));
  }
}

TEST(PhiloxRandomStream, UniformFloatUsesTop24Bits) {
  RandomStream a(5, 6, 7), b(5, 6, 7);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t u = a.next_u32();
    const float f = b.uniform_float();
    EXPECT_EQ(f, static_cast<float>(u >> 8) / 16777216.0f);
    EXPECT_GE(f, 0.0f);
    EXPECT_LT(f, 1.0f);
  }
}

TEST(PhiloxRandomStream, UniformMoments) {
  RandomStream s(11, 12, 13);
  const int n = 200000;
  double sum_f = 0, sum_d = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double f = s.uniform_float();
    const double d = s.uniform_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum_f += f;
    sum_d += d;
    sum_sq += f * f;
  }
  // Mean 1/2 with sd sqrt(1/12/n) ~ 0.00065; variance 1/12.
  EXPECT_NEAR(sum_f / n, 0.5, 0.005);
  EXPECT_NEAR(sum_d / n, 0.5, 0.005);
  EXPECT_NEAR(sum_sq / n - (sum_f / n) * (sum_f / n), 1.0 / 12, 0.003);
}

TEST(PhiloxRandomStream, UniformIntBoundsInclusive) {
  RandomStream s(1, 1, 1);
  EXPECT_EQ(s.uniform_int(42, 42), 42);
  EXPECT_EQ(s.uniform_int(-5, -5), -5);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const int64_t v = s.uniform_int(-3, 3);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_THROW(s.uniform_int(2, 1), std::invalid_argument);
}

TEST(PhiloxRandomStream, UniformIntExtremeRanges) {
  RandomStream s(2, 2, 2);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  bool negative = false, positive = false;
  for (int i = 0; i < 200; ++i) {
    const int64_t v = s.uniform_int(kMin, kMax);
    negative |= v < 0;
    positive |= v > 0;
  }
  EXPECT_TRUE(negative && positive);
  for (int i = 0; i < 200; ++i) {
    const int64_t v = s.uniform_int(kMax - 1, kMax);
    ASSERT_TRUE(v == kMax - 1 || v == kMax);
    const int64_t w = s.uniform_int(kMin, kMin + 1);
    ASSERT_TRUE(w == kMin || w == kMin + 1);
  }
  // Exactly 2^32 values: the u32 path without rejection.
  for (int i = 0; i < 200; ++i) {
    const int64_t v = s.uniform_int(10, 10 + 0xffffffffLL);
    ASSERT_GE(v, 10);
    ASSERT_LE(v, 10 + 0xffffffffLL);
  }
}

TEST(PhiloxRandomStream, UniformIntSmallRangeIsFlat) {
  RandomStream s(3, 3, 3);
  const int n = 60000;
  std::vector<int> counts(6);
  for (int i = 0; i < n; ++i) ++counts[s.uniform_int(0, 5)];
  for (int c : counts) EXPECT_NEAR(c, n / 6, 500);  // sd ~ 91
}

// With n = 3 * 2^30, `x % n` on a 32-bit draw maps two inputs onto each of the first 2^30 values, so
// P(v < 2^30) would be 1/2 instead of 1/3. Same shape at 64 bits with n = 3 * 2^62.
TEST(PhiloxRandomStream, UniformIntHasNoModuloBias32) {
  RandomStream s(4, 4, 4);
  const int n = 30000;
  int low = 0;
  for (int i = 0; i < n; ++i) low += s.uniform_int(0, 3LL * (1LL << 30) - 1) < (1LL << 30);
  EXPECT_NEAR(static_cast<double>(low) / n, 1.0 / 3, 0.015);  // sd ~ 0.0027
}

TEST(PhiloxRandomStream, UniformIntHasNoModuloBias64) {
  RandomStream s(5, 5, 5);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const uint64_t n_values = 3 * (uint64_t{1} << 62);
  const auto hi = static_cast<int64_t>(static_cast<uint64_t>(kMin) + (n_values - 1));
  const int n = 30000;
  int low = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t offset = static_cast<uint64_t>(s.uniform_int(kMin, hi)) - static_cast<uint64_t>(kMin);
    ASSERT_LT(offset, n_values);
    low += offset < (uint64_t{1} << 62);
  }
  EXPECT_NEAR(static_cast<double>(low) / n, 1.0 / 3, 0.015);
}

TEST(PhiloxRandomStream, NormalMoments) {
  RandomStream s(6, 6, 6);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  int within_one_sd = 0;
  for (int i = 0; i < n; ++i) {
    const double z = s.normal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
    within_one_sd += std::abs(z) < 1.0;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.015);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
  EXPECT_NEAR(static_cast<double>(within_one_sd) / n, 0.6827, 0.006);

  RandomStream t(7, 7, 7);
  double shifted = 0;
  for (int i = 0; i < n; ++i) shifted += t.normal(10.0, 3.0);
  EXPECT_NEAR(shifted / n, 10.0, 0.05);
}

TEST(PhiloxRandomStream, NormalPairsConsumeFourWords) {
  // Box-Muller uses two doubles (four u32) per pair of normals; the spare must not draw more.
  RandomStream s(8, 8, 8);
  s.normal();
  s.normal();
  EXPECT_EQ(s.counter()[3], 1u);
  s.normal();
  EXPECT_EQ(s.counter()[3], 2u);
}

// What one element draws in these tests: a mix of every helper, so each one is covered by the
// thread-independence property.
std::vector<double> draws_for(uint64_t element) {
  RandomStream s(/*seed=*/0xC0FFEE, /*op_id=*/17, element, /*epoch=*/3);
  std::vector<double> out;
  for (int i = 0; i < 3; ++i) out.push_back(s.next_u32());
  out.push_back(s.uniform_float());
  out.push_back(static_cast<double>(s.uniform_int(-1000, 1000)));
  out.push_back(s.normal());
  out.push_back(s.normal());
  out.push_back(s.uniform_double());
  return out;
}

// The core property: what element i gets does not depend on thread count, order, or which other
// elements were drawn.
TEST(PhiloxRandomStream, ElementDrawsIndependentOfThreadsAndOrder) {
  const int n = 4000;
  std::vector<std::vector<double>> reference(n);
  for (int i = 0; i < n; ++i) reference[i] = draws_for(i);

  for (int threads : {1, 2, 3, 8}) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(threads));
    // Each thread handles only part of the elements, so every thread skips most of them.
    order.resize(n - n / 5);
    std::vector<std::vector<double>> got(n);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (size_t k = t; k < order.size(); k += threads) got[order[k]] = draws_for(order[k]);
      });
    }
    for (auto& th : pool) th.join();
    for (size_t k = 0; k < order.size(); ++k) {
      ASSERT_EQ(got[order[k]], reference[order[k]]) << "element " << order[k] << ", " << threads << " threads";
    }
  }
}

TEST(PhiloxRandomStream, NeighbouringElementsDiffer) {
  std::set<uint32_t> firsts;
  for (uint64_t e = 0; e < 1000; ++e) firsts.insert(RandomStream(1, 1, e).next_u32());
  EXPECT_GT(firsts.size(), 995u);  // 32-bit collisions among 1000 values are very unlikely
}

}  // namespace
}  // namespace pipec

namespace pipec {
TEST(PhiloxRandomStream, PrederivedKeyGivesTheSameStream) {
  for (uint64_t element : {0ull, 1ull, 12345678901ull}) {
    RandomStream a(7, 3, element, 2);
    RandomStream b(RandomStream::derive_key(7, 3, 2), element, 2);
    for (int i = 0; i < 9; ++i) EXPECT_EQ(a.next_u32(), b.next_u32());
  }
}
}  // namespace pipec

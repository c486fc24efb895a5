// The JPEG window index's Huffman decoding (runtime/image/jpeg_huffman.h): skipping a block's AC
// coefficients with the several-symbols-per-lookup table ends where a bit-by-bit decode following
// libjpeg's loop ends, and fails where it fails, on random code tables (codes up to 16 bits, longer
// than the lookup) and random streams; multi_skip_for builds a table only where it pays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/image/jpeg_huffman.h"

namespace pipec {
namespace {

using namespace jpeg_huffman;

// A canonical table of `symbols` random distinct values whose code lengths come from splitting random
// leaves of a code tree (deep ones more often when `deep`), less one longest leaf: the all-ones code
// stays unused, as T.81 and libjpeg require.
HuffTable random_table(std::mt19937& rng, int symbols, bool deep) {
  std::vector<int> depth = {0};
  while (static_cast<int>(depth.size()) < symbols + 1) {
    std::vector<size_t> splittable;
    for (size_t i = 0; i < depth.size(); ++i)
      if (depth[i] < 16) splittable.push_back(i);
    if (splittable.empty()) break;
    size_t pick = splittable[rng() % splittable.size()];
    if (deep)  // the deepest of a few draws
      for (int t = 0; t < 3; ++t) {
        const size_t other = splittable[rng() % splittable.size()];
        if (depth[other] > depth[pick]) pick = other;
      }
    const int d = depth[pick] + 1;
    depth[pick] = d;
    depth.push_back(d);
  }
  std::sort(depth.begin(), depth.end());
  depth.pop_back();
  HuffTable t;
  for (int d : depth) ++t.counts[d];
  std::vector<uint8_t> all(256);
  for (int v = 0; v < 256; ++v) all[static_cast<size_t>(v)] = static_cast<uint8_t>(v);
  std::shuffle(all.begin(), all.end(), rng);
  // End of block and the run of 16 zeros are in most tables, often with short codes.
  for (uint8_t must : {uint8_t{0x00}, uint8_t{0xF0}})
    if (rng() % 4 != 0) std::iter_swap(all.begin() + (rng() % 3), std::find(all.begin(), all.end(), must));
  t.values.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(depth.size()));
  return t;
}

// The table's codes, as T.81 C.2 assigns them: (code, length) per value index.
std::vector<std::pair<uint32_t, int>> canonical_codes(const HuffTable& t) {
  std::vector<std::pair<uint32_t, int>> codes;
  uint32_t code = 0;
  for (int len = 1; len <= 16; ++len, code <<= 1)
    for (int i = 0; i < t.counts[len]; ++i) codes.emplace_back(code++, len);
  return codes;
}

struct Bits {
  std::vector<uint8_t> bytes;
  uint64_t size = 0;
  void put(uint32_t value, int n) {
    for (int i = n - 1; i >= 0; --i, ++size) {
      if (size % 8 == 0) bytes.push_back(0);
      if ((value >> i) & 1) bytes.back() |= static_cast<uint8_t>(0x80 >> (size % 8));
    }
  }
  int bit(uint64_t at) const { return at / 8 < bytes.size() ? (bytes[at / 8] >> (7 - at % 8)) & 1 : 0; }
};

// libjpeg's AC loop (jdhuff.c decode_mcu_slow), reading one bit at a time: where the block ends, or
// "" with the failure as skip_ac words it.
std::string reference_skip(const Bits& in, const HuffTable& t, uint64_t& at) {
  const auto codes = canonical_codes(t);
  for (int k = 1; k < 64;) {
    uint32_t code = 0;
    int rs = -1;
    for (int len = 1; len <= 16 && rs < 0; ++len) {
      code = code << 1 | static_cast<uint32_t>(in.bit(at++));
      for (size_t i = 0; i < codes.size(); ++i)
        if (codes[i].second == len && codes[i].first == code) rs = t.values[i];
    }
    if (rs < 0) return "corrupt data: a bad Huffman code";
    const int r = rs >> 4, size = rs & 15;
    if (size) {
      k += r + 1;
      at += static_cast<uint64_t>(size);
      if (k > 64) return "corrupt data: a block of more than 64 coefficients";
    } else {
      if (r != 15) break;
      k += 16;
      if (k > 63) return "corrupt data: a block of more than 64 coefficients";
    }
  }
  return "";
}

// A stream of `n` random symbols of `t`, each with random extra bits; or, when `noise`, random bits.
Bits random_stream(std::mt19937& rng, const HuffTable& t, int n, bool noise) {
  Bits b;
  const auto codes = canonical_codes(t);
  const auto eob = std::find(t.values.begin(), t.values.end(), uint8_t{0});
  for (int i = 0; i < n; ++i) {
    if (noise) {
      b.put(static_cast<uint32_t>(rng()), 32);
      continue;
    }
    // Ends of blocks and short codes mostly, as in photos, but every code now and then.
    size_t pick = rng() % codes.size();
    if (rng() % 4 != 0) pick = std::min(pick, static_cast<size_t>(rng() % 6));
    if (rng() % 8 == 0 && eob != t.values.end()) pick = static_cast<size_t>(eob - t.values.begin());
    b.put(codes[pick].first, codes[pick].second);
    const int size = t.values[pick] & 15;
    if (size) b.put(static_cast<uint32_t>(rng()), size);
  }
  return b;
}

TEST(JpegHuffman, MultiSymbolSkipEndsWhereABitByBitDecodeEnds) {
  std::mt19937 rng(20261129);
  int64_t blocks = 0, failures = 0, long_codes = 0;
  uint64_t symbols_bits = 0;
  for (int round = 0; round < 300; ++round) {
    const bool deep = round % 2 == 1;
    HuffTable t = random_table(rng, 2 + static_cast<int>(rng() % 200), deep);
    ASSERT_TRUE(build_table(t, false)) << "round " << round;
    for (int len = kMultiBits + 1; len <= 16; ++len) long_codes += t.counts[len];
    const auto multi = build_multi_skip(t);
    const bool noise = round % 5 == 4;
    const Bits stream = random_stream(rng, t, noise ? 64 : 400, noise);
    std::vector<uint8_t> padded = stream.bytes;
    padded.insert(padded.end(), 8, 0);  // as the scan's bytes end
    BitReader one(padded.data(), padded.size()), several(padded.data(), padded.size());
    uint64_t at = 0;
    // Block after block, until the stream ends; after corrupt data, from another bit.
    while (at < stream.size) {
      SCOPED_TRACE(::testing::Message() << "round " << round << " block at bit " << at);
      std::string why_one, why_several;
      const uint64_t before = at;
      const std::string want = reference_skip(stream, t, at);
      const bool ok_one = skip_ac(one, t, nullptr, why_one);
      const bool ok_several = skip_ac(several, t, multi->entries.data(), why_several);
      ASSERT_EQ(ok_one, want.empty());
      ASSERT_EQ(ok_several, want.empty());
      ++blocks;
      if (!want.empty()) {
        EXPECT_EQ(why_one, want);
        EXPECT_EQ(why_several, want);
        ++failures;
        // Go on from a bit a little after this block's start.
        at = before + 1 + rng() % 16;
        one.seek(at);
        several.seek(at);
        continue;
      }
      ASSERT_EQ(one.pos(), at);
      ASSERT_EQ(several.pos(), at);
      symbols_bits += at - before;
    }
  }
  // The streams reached what the fast path must step around.
  EXPECT_GT(blocks, 5000);
  EXPECT_GT(failures, 50);
  EXPECT_GT(long_codes, 300);
  EXPECT_GT(symbols_bits, uint64_t{100000});
}

// The standard luminance AC table (T.81 K.5) holds codes of 2 to 16 bits; some entries by hand.
TEST(JpegHuffman, MultiSkipEntriesOfTheStandardTable) {
  static const uint8_t counts[17] = {0, 0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d};
  static const uint8_t values[] = {
      0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71,
      0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72,
      0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37,
      0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59,
      0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83,
      0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3,
      0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
      0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
      0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa};
  HuffTable t;
  std::copy(std::begin(counts), std::end(counts), t.counts);
  t.values.assign(std::begin(values), std::end(values));
  ASSERT_TRUE(build_table(t, false));
  const auto m = build_multi_skip(t);
  auto entry = [&](uint32_t bits) {
    const uint16_t e = m->entries[bits];
    return std::make_tuple(e & kMultiBitsMask, (e & kMultiEnd) != 0, e >> kMultiAdvanceShift);
  };
  // 00 = 0x01 (+1 bit), 100 = 0x03 (+3 bits), 1010 = end of block, 11010 = 0x05 (+5 bits).
  // 00 x | 00 x | 1010 | 00: two coefficients, then the block ends (what follows is the next's).
  EXPECT_EQ(entry(0b000001101000), std::make_tuple(10u, true, 2u));
  // 1010 first: the block ends at once, 4 bits.
  EXPECT_EQ(entry(0b101000000000), std::make_tuple(4u, true, 0u));
  // 100 xxx | 100 xxx: 12 bits, two coefficients.
  EXPECT_EQ(entry(0b100000100000), std::make_tuple(12u, false, 2u));
  // 11111111001 = ZRL (11 bits), then one bit: not a whole code; 11 bits, 16 zeros.
  EXPECT_EQ(entry(0b111111110010), std::make_tuple(11u, false, 16u));
  // 16-bit codes start 1111111110: no symbol in the lookup.
  EXPECT_EQ(m->entries[0b111111111000], 0);
  // 100 xxx | 11010, whose 5 extra bits run past the lookup: they are skipped too.
  EXPECT_EQ(entry(0b100000110100), std::make_tuple(16u, false, 2u));
}

TEST(JpegHuffman, ASkipTableIsBuiltOnceTheScansWouldRepayIt) {
  std::mt19937 rng(7);
  HuffTable a = random_table(rng, 100, false);
  ASSERT_TRUE(build_table(a, false));
  const size_t small = kMultiSkipWorthBytes / 4;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(multi_skip_for(a, small), nullptr) << "scan " << i << ": not yet";
  const auto built = multi_skip_for(a, small);
  ASSERT_NE(built, nullptr) << "the fourth scan of a quarter of the price";
  EXPECT_EQ(built->values, a.values);
  EXPECT_EQ(multi_skip_for(a, 1), built) << "kept, not built again";
  HuffTable b = random_table(rng, 90, true);
  ASSERT_TRUE(build_table(b, false));
  EXPECT_NE(multi_skip_for(b, kMultiSkipWorthBytes), nullptr) << "a large scan: at once";
  // A few more tables, each used by a large scan, push out the least recently used ones only.
  EXPECT_EQ(multi_skip_for(a, 1), built);
  for (int i = 0; i < 6; ++i) {
    HuffTable other = random_table(rng, 50 + i, false);
    ASSERT_TRUE(build_table(other, false));
    EXPECT_NE(multi_skip_for(other, kMultiSkipWorthBytes), nullptr);
  }
  EXPECT_EQ(multi_skip_for(a, 1), built) << "used lately: kept";
}

}  // namespace
}  // namespace pipec

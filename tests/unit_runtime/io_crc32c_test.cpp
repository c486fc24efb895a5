#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "runtime/io/crc32c.h"
#include "runtime/io/tfrecord_format.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

using Fn = uint32_t (*)(uint32_t, const void*, size_t);

std::vector<std::pair<const char*, Fn>> implementations() {
  std::vector<std::pair<const char*, Fn>> fns{{"portable", crc32c_extend_portable}, {"dispatch", crc32c_extend}};
  if (crc32c_have_sse42()) fns.push_back({"sse42", crc32c_extend_sse42});
  if (crc32c_have_sse42_clmul()) fns.push_back({"sse42_3way", crc32c_extend_sse42_3way});
  return fns;
}

TEST(IoCrc32c, KnownVectors) {
  // "123456789" is the standard check value; the 32-byte vectors are from RFC 3720 (iSCSI).
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, 0), down(32, 0);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<char>(i);
    down[i] = static_cast<char>(31 - i);
  }
  for (auto [name, fn] : implementations()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(fn(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(fn(0, zeros.data(), 32), 0x8A9136AAu);
    EXPECT_EQ(fn(0, ones.data(), 32), 0x62A8AB43u);
    EXPECT_EQ(fn(0, up.data(), 32), 0x46DD794Eu);
    EXPECT_EQ(fn(0, down.data(), 32), 0x113FDB5Cu);
    EXPECT_EQ(fn(0, "", 0), 0u);
    EXPECT_EQ(fn(0, "a", 1), 0xC1D04330u);
  }
}

TEST(IoCrc32c, ExtendEqualsWholeBuffer) {
  std::string s = "The quick brown fox jumps over the lazy dog, many times over and over";
  uint32_t whole = crc32c(s);
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t part = crc32c(s.data(), cut);
    EXPECT_EQ(crc32c_extend(part, s.data() + cut, s.size() - cut), whole) << "cut at " << cut;
  }
}

TEST(IoCrc32c, Sse42AndPortableAgreeOnRandomData) {
  if (!crc32c_have_sse42()) GTEST_SKIP() << "this CPU has no SSE4.2";
  std::mt19937_64 rng(1234);
  std::vector<uint8_t> buf(70000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  // Every length up to 300 at every alignment 0..7 (exercising the 1/4/8/32-byte loops and their
  // tails), then some large sizes, and chained extends with random seeds.
  for (size_t align = 0; align < 8; ++align)
    for (size_t n = 0; n <= 300; ++n)
      ASSERT_EQ(crc32c_extend_sse42(0, buf.data() + align, n), crc32c_extend_portable(0, buf.data() + align, n))
          << "n=" << n << " align=" << align;
  for (size_t n : {1000u, 4095u, 4096u, 4097u, 65536u, 69993u}) {
    uint32_t seed = static_cast<uint32_t>(rng());
    EXPECT_EQ(crc32c_extend_sse42(seed, buf.data() + 3, n), crc32c_extend_portable(seed, buf.data() + 3, n)) << n;
  }
}

// The three-chain version splits a buffer into rounds of 3 x 1024 bytes, one last round of three equal
// blocks (a multiple of 8 bytes each) and a tail of under 24 bytes on one chain: every length up to two
// rounds and around the later round boundaries, at every alignment, from random running states, must
// give the single chain's (and the table version's) CRC exactly.
TEST(IoCrc32c, InterleavedChainsMatchOneChainAroundEveryBoundary) {
  if (!crc32c_have_sse42_clmul()) GTEST_SKIP() << "this CPU has no SSE4.2 and PCLMULQDQ";
  std::mt19937_64 rng(99);
  std::vector<uint8_t> buf(3 * 1024 * 5 + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 2 * 3072 + 100; ++n) lengths.push_back(n);
  for (size_t k = 3; k <= 4; ++k)
    for (size_t d = 0; d < 40; ++d) {
      lengths.push_back(k * 3072 + d);
      lengths.push_back(k * 3072 - d);
    }
  for (size_t n : lengths) {
    if (n + 8 > buf.size()) continue;
    for (size_t align = 0; align < 8; ++align) {
      const uint32_t seed = align == 0 ? 0 : static_cast<uint32_t>(rng());
      const uint8_t* p = buf.data() + align;
      const uint32_t want = crc32c_extend_sse42(seed, p, n);
      ASSERT_EQ(crc32c_extend_sse42_3way(seed, p, n), want) << "n=" << n << " align=" << align;
      if (n % 97 == 0) {
        ASSERT_EQ(crc32c_extend_portable(seed, p, n), want) << "n=" << n << " align=" << align;
      }
    }
  }
  // All of a large buffer, and the same in uneven pieces.
  const uint32_t whole = crc32c_extend_portable(0, buf.data(), buf.size());
  EXPECT_EQ(crc32c_extend_sse42_3way(0, buf.data(), buf.size()), whole);
  uint32_t c = 0;
  for (size_t at = 0, piece = 1; at < buf.size(); at += piece, piece = piece * 3 + 1) {
    const size_t m = std::min(piece, buf.size() - at);
    c = crc32c_extend_sse42_3way(c, buf.data() + at, m);
  }
  EXPECT_EQ(c, whole);
}

TEST(IoCrc32c, MaskRoundTripsAndIsNotIdentity) {
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xffffffffu, 0x80000000u}) {
    EXPECT_EQ(crc32c_unmask(crc32c_mask(c)), c);
    EXPECT_NE(crc32c_mask(c), c);
  }
  // ((c >> 15) | (c << 17)) + 0xa282ead8, worked by hand for c = 1: (1 << 17) + 0xa282ead8.
  EXPECT_EQ(crc32c_mask(1u), 0xa284ead8u);
}

TEST(IoCrc32c, MatchesTensorFlowFraming) {
  // The record b"foo" as TensorFlow wrote it: length 3, masked CRC of the length, "foo", masked
  // CRC of "foo".
  std::string rec = testing::base64_decode("AwAAAAAAAACwmUkOZm9vYYq+/g==");
  ASSERT_EQ(rec.size(), 12u + 3u + 4u);
  EXPECT_EQ(load_le32(rec.data() + 8), crc32c_masked(rec.data(), 8));
  EXPECT_EQ(load_le32(rec.data() + 15), crc32c_masked("foo", 3));
  char header[12];
  tfrecord::encode_header(header, 3);
  EXPECT_EQ(std::string(header, 12), rec.substr(0, 12));
}

}  // namespace
}  // namespace pipec

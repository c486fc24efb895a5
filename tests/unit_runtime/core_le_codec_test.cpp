#include "runtime/core/le_codec.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipec {
namespace {

TEST(LeCodec, StoresLeastSignificantByteFirst) {
  std::string out;
  append_le32(out, 0x04030201u);
  append_le64(out, 0x0c0b0a0908070605ull);
  ASSERT_EQ(out.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(static_cast<uint8_t>(out[i]), i + 1) << i;
  unsigned char b[8];
  store_le32(b, 0xa1b2c3d4u);
  EXPECT_EQ(b[0], 0xd4);
  EXPECT_EQ(b[3], 0xa1);
  store_le64(b, 0x1122334455667788ull);
  EXPECT_EQ(b[0], 0x88);
  EXPECT_EQ(b[7], 0x11);
}

TEST(LeCodec, LoadsAtEveryAlignment) {
  std::vector<unsigned char> buf(32);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(0x10 + i);
  for (size_t at = 0; at + 8 <= buf.size(); ++at) {
    uint64_t want64 = 0;
    for (int k = 7; k >= 0; --k) want64 = want64 << 8 | buf[at + k];
    EXPECT_EQ(load_le64(buf.data() + at), want64) << at;
    EXPECT_EQ(load_le32(buf.data() + at), static_cast<uint32_t>(want64)) << at;
  }
}

TEST(LeCodec, RoundTripsExtremes) {
  for (uint64_t v :
       {uint64_t{0}, uint64_t{1}, uint64_t{0x80}, ~uint64_t{0}, uint64_t{1} << 63, uint64_t{0x0123456789abcdef}}) {
    std::string s;
    append_le64(s, v);
    append_le32(s, static_cast<uint32_t>(v >> 7));
    EXPECT_EQ(load_le64(s.data()), v);
    EXPECT_EQ(load_le32(s.data() + 8), static_cast<uint32_t>(v >> 7));
  }
}

TEST(LeCodec, Crc32IsZlibs) {
  EXPECT_EQ(crc32_zlib("", 0), 0u);
  EXPECT_EQ(crc32_zlib("123456789", 9), 0xcbf43926u);  // the CRC-32 check value
  std::string data;
  for (int i = 0; i < 100000; ++i) data.push_back(static_cast<char>(i * 7 + (i >> 5)));
  for (size_t n : {size_t{1}, size_t{13}, size_t{4096}, data.size()}) {
    const uLong want = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(n));
    EXPECT_EQ(crc32_zlib(data.data(), n), static_cast<uint32_t>(want)) << n;
  }
}

}  // namespace
}  // namespace pipec

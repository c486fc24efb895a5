// The safetensors writer and reader: the exact bytes of a small file (header length, JSON header padded
// to 8 bytes, contiguous little-endian data), a round trip, and clear errors for broken files.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/train/persist/safetensors.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

using testing::read_file;
using testing::ScratchDir;
using testing::write_file;

TEST(Safetensors, BytesOfASmallFile) {
  ScratchDir d;
  std::string path = d.path() + "/w.safetensors";
  const float kernel[6] = {1, -2, 3.5f, 0, 1e-3f, -0.0f};
  const float bias[2] = {0.25f, 7};
  write_safetensors(path, {{"dense/kernel", {3, 2}, kernel}, {"dense/bias", {2}, bias}}, {{"model", "net"}});
  std::string bytes = read_file(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u) << "the header is padded to a multiple of 8 bytes";
  std::string header = bytes.substr(8, n);
  std::string want =
      R"({"__metadata__":{"model":"net"},"dense/kernel":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]},)"
      R"("dense/bias":{"dtype":"F32","shape":[2],"data_offsets":[24,32]}})";
  EXPECT_EQ(header.substr(0, want.size()), want);
  EXPECT_EQ(header.find_first_not_of(' ', want.size()), std::string::npos) << "only spaces pad the header";
  ASSERT_EQ(bytes.size(), 8 + n + 32);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n, kernel, 24), 0);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n + 24, bias, 8), 0);
  // Little-endian IEEE floats: 1.0f is 00 00 80 3f.
  EXPECT_EQ(static_cast<uint8_t>(bytes[8 + n + 3]), 0x3f);
  EXPECT_EQ(static_cast<uint8_t>(bytes[8 + n + 2]), 0x80);
}

TEST(Safetensors, RoundTrip) {
  ScratchDir d;
  std::string path = d.path() + "/w.safetensors";
  std::vector<float> a(3 * 3 * 2 * 4), b = {1.5f};
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.1f - 1;
  write_safetensors(path, {{"conv2d/kernel", {3, 3, 2, 4}, a.data()}, {"x\"y\\z", {}, b.data()}});
  SafetensorsFile f = read_safetensors(path);
  ASSERT_EQ(f.order, (std::vector<std::string>{"conv2d/kernel", "x\"y\\z"}));
  EXPECT_EQ(f.tensors["conv2d/kernel"].shape, (Shape{3, 3, 2, 4}));
  EXPECT_EQ(f.tensors["conv2d/kernel"].data, a);
  EXPECT_EQ(f.tensors["x\"y\\z"].shape, Shape{});
  EXPECT_EQ(f.tensors["x\"y\\z"].data, b);
  EXPECT_TRUE(f.metadata.empty());
}

TEST(Safetensors, BrokenFilesAreClearErrors) {
  ScratchDir d;
  std::string path = d.path() + "/w.safetensors";
  const float v[4] = {1, 2, 3, 4};
  write_safetensors(path, {{"a", {4}, v}});
  std::string good = read_file(path);
  auto expect_error = [&](const std::string& bytes, const std::string& needle) {
    write_file(path, bytes);
    try {
      read_safetensors(path);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  };
  expect_error("abc", "shorter than its 8-byte header length");
  expect_error(good.substr(0, good.size() - 4), "data_offsets [0, 16] do not hold 4 values of F32");
  std::string huge = good;
  huge[0] = '\xff';
  huge[1] = '\xff';
  expect_error(huge, "its header claims");
  std::string not_json = good;
  not_json[8] = '[';
  expect_error(not_json, "not a safetensors file");
  std::string gap = good + std::string(4, '\0');
  expect_error(gap, "bytes of data after the last tensor");
  std::string i64 = good;
  i64.replace(i64.find("F32"), 3, "I64");
  expect_error(i64, "is I64; weights must be F32");
}

TEST(Safetensors, MissingFile) { EXPECT_THROW(read_safetensors("/nonexistent/w.safetensors"), std::runtime_error); }

}  // namespace
}  // namespace pipec

// The end-to-end comparison of tests/gpu/run.sh must catch what it is there to catch: a flipped
// integer bit, a float past its ulp bound, a missing element, a changed shape; and must accept NaN vs
// NaN, +0 vs -0 and floats within the bound. Runs without a GPU (ctest gpu_tests_dry_run).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/io/npy.h"
#include "tests/gpu/compare_output_dirs.h"

namespace pipec::gputest {
namespace {

namespace fs = std::filesystem;

struct Dirs {
  fs::path root =
      fs::temp_directory_path() / fmt::format("pipec-compare-dirs-{}-{}", ::getpid(),
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path a = root / "a", b = root / "b";
  Dirs() { fs::remove_all(root); }
  ~Dirs() { fs::remove_all(root); }
};

float ulps_up(float x, int n) {
  for (int i = 0; i < n; ++i) x = std::nextafter(x, std::numeric_limits<float>::infinity());
  return x;
}

Tensor f32(std::vector<float> v) {
  Tensor t = Tensor::empty(DType::F32, {static_cast<int64_t>(v.size())});
  std::memcpy(t.data<float>(), v.data(), v.size() * 4);
  return t;
}

Tensor i64(std::vector<int64_t> v) {
  Tensor t = Tensor::empty(DType::I64, {static_cast<int64_t>(v.size())});
  std::memcpy(t.data<int64_t>(), v.data(), v.size() * 8);
  return t;
}

void put(const fs::path& dir, int element, const std::string& field, const Tensor& t) {
  fs::path folder = dir / fmt::format("{:06d}", element);
  fs::create_directories(folder);
  write_npy((folder / (field + ".npy")).string(), t);
}

std::string text(const DirComparison& c) {
  std::ostringstream os;
  c.print(os);
  return os.str();
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(CompareOutputDirs, AcceptsNaNSignedZeroAndFloatsWithinTheBound) {
  Dirs d;
  put(d.a, 0, "x", f32({1.0f, kNaN, 0.0f, 3.5f}));
  put(d.b, 0, "x", f32({ulps_up(1.0f, 4), -kNaN, -0.0f, 3.5f}));
  put(d.a, 0, "n", i64({7, -1}));
  put(d.b, 0, "n", i64({7, -1}));
  DirComparison c = compare_output_dirs(d.a, d.b);
  EXPECT_TRUE(c.ok()) << text(c);
  ASSERT_EQ(c.fields.size(), 2u);
  EXPECT_EQ(c.fields[1].field, "x");
  EXPECT_EQ(c.fields[1].max_ulp, 4);
  EXPECT_EQ(c.fields[1].differing, 1);
  EXPECT_NE(text(c).find("same within the bounds"), std::string::npos);
}

TEST(CompareOutputDirs, FindsAFloatPastTheBoundAndAFlippedIntegerBit) {
  Dirs d;
  put(d.a, 0, "x", f32({1.0f, 2.0f}));
  put(d.b, 0, "x", f32({1.0f, ulps_up(2.0f, 5)}));
  put(d.a, 1, "x", f32({1.0f, 2.0f}));
  put(d.b, 1, "x", f32({1.0f, 2.0f}));
  put(d.a, 0, "n", i64({7, 8}));
  put(d.b, 0, "n", i64({7, 8}));
  put(d.a, 1, "n", i64({7, 8}));
  put(d.b, 1, "n", i64({7, 8 ^ (int64_t{1} << 40)}));
  DirComparison c = compare_output_dirs(d.a, d.b);
  EXPECT_FALSE(c.ok());
  ASSERT_EQ(c.fields.size(), 2u);
  EXPECT_FALSE(c.fields[0].ok());
  EXPECT_NE(c.fields[0].first.find("element 1 index 1"), std::string::npos) << c.fields[0].first;
  EXPECT_FALSE(c.fields[1].ok());
  EXPECT_EQ(c.fields[1].max_ulp, 5);
  EXPECT_NE(text(c).find("DIFFERENT"), std::string::npos);
}

TEST(CompareOutputDirs, FindsAMissingElementAChangedShapeAndNothingToCompare) {
  Dirs d;
  put(d.a, 0, "x", f32({1.0f}));
  put(d.a, 1, "x", f32({1.0f}));
  put(d.b, 0, "x", f32({1.0f}));
  EXPECT_NE(compare_output_dirs(d.a, d.b).error.find("2 elements vs 1"), std::string::npos);
  put(d.b, 1, "x", f32({1.0f, 1.0f}));
  EXPECT_NE(compare_output_dirs(d.a, d.b).error.find("element 1 field `x`"), std::string::npos);
  fs::create_directories(d.root / "empty1");
  fs::create_directories(d.root / "empty2");
  EXPECT_FALSE(compare_output_dirs(d.root / "empty1", d.root / "empty2").ok());
  EXPECT_FALSE(compare_output_dirs(d.root / "missing", d.a).ok());
}

}  // namespace
}  // namespace pipec::gputest

// Casts: float -> int truncation, saturation and NaN; int wrap-around; bool; 16-bit float rounding,
// including f64 -> bf16 where rounding through f32 to nearest would round twice.
#include <climits>
#include <cmath>
#include <limits>

#include "ops_test_util.h"

namespace pipec {
namespace {

using namespace ops_test;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(OpsCast, FloatToIntTruncatesSaturatesAndMapsNaNToZero) {
  Tensor x = make(DType::F32, {7}, {3.7, -3.7, 200, -200, kNaN, kInf, -0.9});
  EXPECT_EQ(ints(cast_tensor(x, DType::I8)), (std::vector<int64_t>{3, -3, 127, -128, 0, 127, 0}));
  EXPECT_EQ(ints(cast_tensor(x, DType::U8)), (std::vector<int64_t>{3, 0, 200, 0, 0, 255, 0}));
  Tensor big = make(DType::F64, {4}, {1e19, -1e19, 9223372036854775807.0, -9223372036854775808.0});
  Tensor i = cast_tensor(big, DType::I64);
  EXPECT_EQ(ints(i), (std::vector<int64_t>{INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN}));
  Tensor u = cast_tensor(make(DType::F64, {3}, {1e20, 1.8e19, -5}), DType::U64);
  EXPECT_EQ(u.data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(u.data<uint64_t>()[1], 18000000000000000000ull);
  EXPECT_EQ(u.data<uint64_t>()[2], 0u);
  EXPECT_EQ(ints(cast_tensor(make(DType::F16, {2}, {-2.5, 65504}), DType::I16)), (std::vector<int64_t>{-2, 32767}));
  EXPECT_EQ(ints(cast_tensor(make(DType::F32, {2}, {2147483520.0, 2147483648.0}), DType::I32)),
            (std::vector<int64_t>{2147483520, INT_MAX}));
}

TEST(OpsCast, IntToIntWraps) {
  EXPECT_EQ(ints(cast_tensor(make(DType::I32, {3}, {300, -129, -1}), DType::I8)), (std::vector<int64_t>{44, 127, -1}));
  EXPECT_EQ(ints(cast_tensor(make_i64({2}, {-1, 256}), DType::U8)), (std::vector<int64_t>{255, 0}));
  Tensor u = cast_tensor(make(DType::I8, {1}, {-1}), DType::U64);
  EXPECT_EQ(u.data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(ints(cast_tensor(make(DType::U16, {1}, {65535}), DType::I16)), (std::vector<int64_t>{-1}));
}

TEST(OpsCast, BoolCasts) {
  Tensor x = make(DType::F32, {5}, {0, -0.0, 2, kNaN, 0.1});
  EXPECT_EQ(ints(cast_tensor(x, DType::Bool)), (std::vector<int64_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(ints(cast_tensor(make(DType::I32, {3}, {0, -5, 256}), DType::Bool)), (std::vector<int64_t>{0, 1, 1}));
  expect_values(cast_tensor(make(DType::Bool, {2}, {1, 0}), DType::F32), {1, 0});
  expect_values(cast_tensor(make(DType::Bool, {2}, {1, 0}), DType::BF16), {1, 0});
  EXPECT_EQ(ints(cast_tensor(make(DType::Bool, {2}, {1, 0}), DType::I64)), (std::vector<int64_t>{1, 0}));
}

TEST(OpsCast, IntToFloat) {
  Tensor u = Tensor::empty(DType::U64, {1});
  u.data<uint64_t>()[0] = UINT64_MAX;
  expect_values(cast_tensor(u, DType::F32), {18446744073709551616.0});
  expect_values(cast_tensor(make(DType::I32, {2}, {16777217, -3}), DType::F32), {16777216, -3});  // nearest even
  expect_values(cast_tensor(make(DType::I32, {2}, {70000, 2049}), DType::F16), {kInf, 2048});     // 2049 ties to 2048
}

TEST(OpsCast, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);                  // the tie rounds to even: infinity
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);     // tie between 0 and 2^-24: 0
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -26)), 0x0001);     // 0.75 * 2^-24 rounds up
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 * 2^-24: tie to even 2
  EXPECT_EQ(float_to_half_bits(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up into the normals
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every finite f16 survives a round trip through f32
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_half_bits(half_bits_to_float(static_cast<uint16_t>(h))), h) << h;
  }
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);

  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);        // tie -> even
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(3.0f, -8)), 0x3f82);        // tie -> even (up)
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // overflows to inf
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(OpsCast, F64ToHalfRoundsOnce) {
  // 1 + 2^-8 + 2^-40 is just above the bf16 tie: f64 -> f32 to nearest would land on the tie and then
  // round to even (1.0); one correct rounding gives 1 + 2^-7.
  double d = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(convert<bf16_t>(d).bits, 0x3f81);
  double h = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);  // same for f16
  EXPECT_EQ(convert<f16_t>(h).bits, 0x3c01);
  EXPECT_EQ(convert<f16_t>(1.0 + std::ldexp(1.0, -11)).bits, 0x3c00);
  EXPECT_EQ(convert<f16_t>(1e300).bits, 0x7c00);
  EXPECT_EQ(convert<bf16_t>(-1e300).bits, 0xff80);
  // i64 -> bf16 rounds once too: 2^40 + 2^32 + 1 is above the tie at 2^40 + 2^32.
  EXPECT_EQ(convert<bf16_t>(static_cast<int64_t>((1ll << 40) + (1ll << 32) + 1)).bits,
            float_to_bf16_bits(std::ldexp(1.0f, 40) + std::ldexp(1.0f, 33)));
}

TEST(OpsCast, CastKernelUsesTheResultDtype) {
  Tensor out = call("cast", {make(DType::F64, {2, 2}, {1.5, -1.5, 300, 7})}, DType::U8, {2, 2},
                    {{"dtype", Value::make_symbol("u8")}});
  EXPECT_EQ(out.dtype(), DType::U8);
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(ints(out), (std::vector<int64_t>{1, 0, 255, 7}));
  EXPECT_THROW(cast_tensor(Tensor::from_strings({"a"}, {1}), DType::U8), OpError);
}

}  // namespace
}  // namespace pipec

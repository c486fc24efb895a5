// Element-wise kernels: arithmetic with integer edge cases, floats, 16-bit floats, broadcasting,
// comparisons, logic, unary math and where/clip. Expectations are computed by hand.
#include <climits>
#include <cmath>
#include <limits>

#include "ops_test_util.h"

namespace pipec {
namespace {

using namespace ops_test;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(OpsElementwise, IntegerFloorDivAndModFollowPython) {
  Tensor a = make(DType::I32, {6}, {7, -7, 7, -7, 5, INT_MIN});
  Tensor b = make(DType::I32, {6}, {2, 2, -2, -2, 0, -1});
  EXPECT_EQ(ints(call("floordiv", {a, b}, DType::I32, {6})), (std::vector<int64_t>{3, -4, -4, 3, 0, INT_MIN}));
  EXPECT_EQ(ints(call("mod", {a, b}, DType::I32, {6})), (std::vector<int64_t>{1, 1, -1, -1, 0, 0}));
  // i8 and unsigned
  Tensor c = make(DType::I8, {3}, {-128, -100, 9});
  Tensor d = make(DType::I8, {3}, {-1, 7, -4});
  EXPECT_EQ(ints(call("floordiv", {c, d}, DType::I8, {3})), (std::vector<int64_t>{-128, -15, -3}));
  EXPECT_EQ(ints(call("mod", {c, d}, DType::I8, {3})), (std::vector<int64_t>{0, 5, -3}));
  Tensor e = make(DType::U16, {2}, {65535, 10});
  Tensor f = make(DType::U16, {2}, {256, 0});
  EXPECT_EQ(ints(call("floordiv", {e, f}, DType::U16, {2})), (std::vector<int64_t>{255, 0}));
  EXPECT_EQ(ints(call("mod", {e, f}, DType::U16, {2})), (std::vector<int64_t>{255, 0}));
}

TEST(OpsElementwise, FloatFloorDivModAndDiv) {
  Tensor a = make(DType::F32, {5}, {7.5, -7.5, 7.5, -7.5, 1});
  Tensor b = make(DType::F32, {5}, {2, 2, -2, -2, 0});
  expect_values(call("floordiv", {a, b}, DType::F32, {5}), {3, -4, -4, 3, kInf});
  expect_values(call("mod", {a, b}, DType::F32, {5}), {1.5, 0.5, -0.5, -1.5, kNaN});
  expect_values(call("div", {a, b}, DType::F32, {5}), {3.75, -3.75, -3.75, 3.75, kInf});
  Tensor c = make(DType::F64, {2}, {-4, 4});
  Tensor d = make(DType::F64, {2}, {2, -2});
  expect_values(call("mod", {c, d}, DType::F64, {2}), {0, -0.0}, true);  // zero takes the divisor's sign
}

TEST(OpsElementwise, IntegerArithmeticWraps) {
  EXPECT_EQ(ints(call("add", {make(DType::U8, {2}, {250, 1}), make(DType::U8, {2}, {10, 2})}, DType::U8, {2})),
            (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(ints(call("add", {make(DType::I8, {1}, {127}), make(DType::I8, {1}, {1})}, DType::I8, {1})),
            (std::vector<int64_t>{-128}));
  EXPECT_EQ(ints(call("sub", {make(DType::U32, {1}, {0}), make(DType::U32, {1}, {1})}, DType::U32, {1})),
            (std::vector<int64_t>{4294967295LL}));
  EXPECT_EQ(ints(call("mul", {make(DType::I16, {1}, {300}), make(DType::I16, {1}, {300})}, DType::I16, {1})),
            (std::vector<int64_t>{24464}));  // 90000 mod 65536
  EXPECT_EQ(ints(call("mul", {make(DType::U16, {1}, {65535}), make(DType::U16, {1}, {65535})}, DType::U16, {1})),
            (std::vector<int64_t>{1}));
  Tensor big = make_i64({1}, {INT64_MAX});
  EXPECT_EQ(ints(call("add", {big, make_i64({1}, {1})}, DType::I64, {1})), (std::vector<int64_t>{INT64_MIN}));
}

TEST(OpsElementwise, IntegerPower) {
  Tensor a = make(DType::I32, {6}, {3, 2, -1, 1, 2, -2});
  Tensor b = make(DType::I32, {6}, {4, -1, -3, -5, 31, 3});
  EXPECT_EQ(ints(call("pow", {a, b}, DType::I32, {6})), (std::vector<int64_t>{81, 0, -1, 1, INT_MIN, -8}));
  expect_values(call("pow", {make(DType::F32, {2}, {2, 4}), make(DType::F32, {2}, {0.5, -1})}, DType::F32, {2}),
                {std::sqrt(2.0f), 0.25});
}

TEST(OpsElementwise, ShiftsWithOutOfRangeCounts) {
  Tensor a = make(DType::I32, {5}, {1, 1, 1, -8, 8});
  Tensor b = make(DType::I32, {5}, {31, 32, -1, 1, 40});
  EXPECT_EQ(ints(call("shl", {a, b}, DType::I32, {5})), (std::vector<int64_t>{INT_MIN, 0, 0, -16, 0}));
  Tensor c = make(DType::I32, {4}, {-8, -8, 8, -8});
  Tensor d = make(DType::I32, {4}, {1, 40, 40, -2});
  EXPECT_EQ(ints(call("shr", {c, d}, DType::I32, {4})), (std::vector<int64_t>{-4, -1, 0, -1}));
  Tensor u = make(DType::U8, {3}, {255, 1, 255});
  Tensor s = make(DType::U8, {3}, {9, 7, 4});
  EXPECT_EQ(ints(call("shr", {u, s}, DType::U8, {3})), (std::vector<int64_t>{0, 0, 15}));
  EXPECT_EQ(ints(call("shl", {u, s}, DType::U8, {3})), (std::vector<int64_t>{0, 128, 240}));
  EXPECT_THROW(call("shl", {make(DType::F32, {1}, {1}), make(DType::F32, {1}, {1})}, DType::F32, {1}), OpError);
}

TEST(OpsElementwise, BitOpsOnIntegersAndBools) {
  Tensor a = make(DType::U8, {2}, {0xF0, 0x0F});
  Tensor b = make(DType::U8, {2}, {0x3C, 0xFF});
  EXPECT_EQ(ints(call("bit_and", {a, b}, DType::U8, {2})), (std::vector<int64_t>{0x30, 0x0F}));
  EXPECT_EQ(ints(call("bit_or", {a, b}, DType::U8, {2})), (std::vector<int64_t>{0xFC, 0xFF}));
  EXPECT_EQ(ints(call("bit_xor", {a, b}, DType::U8, {2})), (std::vector<int64_t>{0xCC, 0xF0}));
  Tensor p = make(DType::Bool, {4}, {0, 0, 1, 1});
  Tensor q = make(DType::Bool, {4}, {0, 1, 0, 1});
  EXPECT_EQ(ints(call("bit_xor", {p, q}, DType::Bool, {4})), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(ints(call("and", {p, q}, DType::Bool, {4})), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(ints(call("or", {p, q}, DType::Bool, {4})), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(ints(call("add", {p, q}, DType::Bool, {4})), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(ints(call("bit_not", {make(DType::I8, {2}, {0, 5})}, DType::I8, {2})), (std::vector<int64_t>{-1, -6}));
  EXPECT_EQ(ints(call("not", {p}, DType::Bool, {4})), (std::vector<int64_t>{1, 1, 0, 0}));
}

TEST(OpsElementwise, MaxMinPropagateNaN) {
  Tensor a = make(DType::F32, {3}, {1, kNaN, 3});
  Tensor b = make(DType::F32, {3}, {kNaN, 2, -1});
  expect_values(call("max", {a, b}, DType::F32, {3}), {kNaN, kNaN, 3});
  expect_values(call("min", {a, b}, DType::F32, {3}), {kNaN, kNaN, -1});
  EXPECT_EQ(ints(call("max", {make(DType::I64, {2}, {-5, 7}), make(DType::I64, {2}, {3, 2})}, DType::I64, {2})),
            (std::vector<int64_t>{3, 7}));
}

TEST(OpsElementwise, BroadcastShapes) {
  Tensor a = make(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = make(DType::I32, {3}, {10, 20, 30});
  Tensor out = call("add", {a, row}, DType::I32);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(ints(out), (std::vector<int64_t>{11, 22, 33, 14, 25, 36}));
  Tensor col = make(DType::F64, {2, 1}, {1, 2});
  Tensor r2 = make(DType::F64, {1, 3}, {10, 20, 30});
  Tensor outer = call("mul", {col, r2}, DType::F64);
  EXPECT_EQ(outer.shape(), (Shape{2, 3}));
  expect_values(outer, {10, 20, 30, 20, 40, 60});
  Tensor scalar = make(DType::U8, {}, {3});
  EXPECT_EQ(ints(call("sub", {scalar, make(DType::U8, {2, 2}, {1, 2, 3, 4})}, DType::U8)),
            (std::vector<int64_t>{2, 1, 0, 255}));
  // [2, 1, 2] against [3, 1]: [2, 3, 2]
  Tensor x = make(DType::I16, {2, 1, 2}, {1, 2, 3, 4});
  Tensor y = make(DType::I16, {3, 1}, {100, 200, 300});
  Tensor z = call("add", {x, y}, DType::I16);
  EXPECT_EQ(z.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(ints(z), (std::vector<int64_t>{101, 102, 201, 202, 301, 302, 103, 104, 203, 204, 303, 304}));
  EXPECT_THROW(call("add", {make(DType::I32, {2}, {1, 2}), make(DType::I32, {3}, {1, 2, 3})}, DType::I32), OpError);
}

TEST(OpsElementwise, HalfFloatsComputeInF32AndRoundToEven) {
  // 1 + 2^-11 is halfway between two f16 values: it rounds to the even one, 1.0.
  Tensor a = make(DType::F16, {3}, {1, 1, 65504});
  Tensor b = make(DType::F16, {3}, {std::ldexp(1.0, -11), 3 * std::ldexp(1.0, -11), 65504});
  EXPECT_EQ(b.data<f16_t>()[0].bits, 0x1000);  // 2^-11 is exact in f16
  Tensor s = call("add", {a, b}, DType::F16, {3});
  EXPECT_EQ(s.data<f16_t>()[0].bits, 0x3c00);
  EXPECT_EQ(s.data<f16_t>()[1].bits, 0x3c02);  // 1 + 3 * 2^-11 rounds up to 1 + 2^-9
  EXPECT_EQ(s.data<f16_t>()[2].bits, 0x7c00);  // overflow to +inf
  Tensor m = call("mul", {make(DType::BF16, {2}, {3, 1.5}), make(DType::BF16, {2}, {1.5, -2})}, DType::BF16, {2});
  expect_values(m, {4.5, -3});
  expect_values(call("tanh", {make(DType::BF16, {1}, {0})}, DType::BF16, {1}), {0});
}

TEST(OpsElementwise, Comparisons) {
  Tensor a = make(DType::F32, {4}, {1, 2, kNaN, -0.0});
  Tensor b = make(DType::F32, {4}, {1, 3, kNaN, 0});
  EXPECT_EQ(ints(call("eq", {a, b}, DType::Bool, {4})), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(ints(call("ne", {a, b}, DType::Bool, {4})), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(ints(call("lt", {a, b}, DType::Bool, {4})), (std::vector<int64_t>{0, 1, 0, 0}));
  EXPECT_EQ(ints(call("le", {a, b}, DType::Bool, {4})), (std::vector<int64_t>{1, 1, 0, 1}));
  Tensor u = make(DType::U64, {2}, {0, 5});
  Tensor v = make(DType::U64, {}, {3});
  EXPECT_EQ(ints(call("gt", {u, v}, DType::Bool, {2})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ints(call("ge", {u, v}, DType::Bool, {2})), (std::vector<int64_t>{0, 1}));
}

TEST(OpsElementwise, BytesEquality) {
  Tensor a = Tensor::from_strings({"ab", "", "cde"}, {3});
  Tensor b = Tensor::from_strings({"ab"}, {});
  EXPECT_EQ(ints(call("eq", {a, b}, DType::Bool, {3})), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(ints(call("ne", {a, b}, DType::Bool, {3})), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_THROW(call("lt", {a, b}, DType::Bool, {3}), OpError);
}

TEST(OpsElementwise, RoundSignAbsNeg) {
  Tensor r = make(DType::F32, {8}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, 0.49999997});
  expect_values(call("round", {r}, DType::F32, {8}), {0, 2, 2, -0.0, -2, 2, -3, 0}, true);
  expect_values(call("round", {make(DType::F64, {2}, {kNaN, -kInf})}, DType::F64, {2}), {kNaN, -kInf});
  expect_values(call("sign", {make(DType::F32, {5}, {-3, 0, -0.0, 2.5, kNaN})}, DType::F32, {5}), {-1, 0, 0, 1, kNaN},
                true);
  EXPECT_EQ(ints(call("sign", {make(DType::I32, {3}, {-7, 0, 9})}, DType::I32, {3})), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(ints(call("sign", {make(DType::U8, {2}, {0, 200})}, DType::U8, {2})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ints(call("abs", {make(DType::I8, {3}, {-128, -5, 5})}, DType::I8, {3})),
            (std::vector<int64_t>{-128, 5, 5}));
  expect_values(call("abs", {make(DType::F64, {2}, {-0.0, -2})}, DType::F64, {2}), {0, 2}, true);
  EXPECT_EQ(ints(call("neg", {make(DType::U8, {2}, {1, 0})}, DType::U8, {2})), (std::vector<int64_t>{255, 0}));
  EXPECT_EQ(ints(call("neg", {make(DType::I64, {1}, {5})}, DType::I64, {1})), (std::vector<int64_t>{-5}));
}

TEST(OpsElementwise, FloatMathAndActivations) {
  Tensor x = make(DType::F64, {3}, {-1, 0, 2});
  std::vector<double> want_tanh{std::tanh(-1.0), 0, std::tanh(2.0)};
  expect_values(call("tanh", {x}, DType::F64, {3}), want_tanh);
  expect_values(call("exp", {x}, DType::F64, {3}), {std::exp(-1.0), 1, std::exp(2.0)});
  expect_values(call("sigmoid", {make(DType::F32, {3}, {0, -1000, 1000})}, DType::F32, {3}), {0.5, 0, 1});
  expect_values(call("relu", {make(DType::F32, {3}, {-2, 3, kNaN})}, DType::F32, {3}), {0, 3, kNaN});
  EXPECT_EQ(ints(call("relu", {make(DType::I32, {2}, {-2, 3})}, DType::I32, {2})), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(ints(call("square", {make(DType::I32, {2}, {-3, 65536})}, DType::I32, {2})), (std::vector<int64_t>{9, 0}));
  expect_values(call("sqrt", {make(DType::F32, {2}, {4, -1})}, DType::F32, {2}), {2, kNaN});
  expect_values(call("rsqrt", {make(DType::F32, {1}, {4})}, DType::F32, {1}), {0.5});
  expect_values(call("log", {make(DType::F32, {2}, {1, 0})}, DType::F32, {2}), {0, -kInf});
  expect_values(call("floor", {make(DType::F32, {2}, {-1.5, 1.5})}, DType::F32, {2}), {-2, 1});
  expect_values(call("ceil", {make(DType::F32, {2}, {-1.5, 1.5})}, DType::F32, {2}), {-1, 2});
  expect_values(call("atan2", {make(DType::F64, {2}, {1, -1}), make(DType::F64, {2}, {0, 0})}, DType::F64, {2}),
                {M_PI / 2, -M_PI / 2});
  EXPECT_THROW(call("tanh", {make(DType::I32, {1}, {1})}, DType::I32, {1}), OpError);
  // Operands in another dtype are converted to the result's first (bool relu computes in i64).
  EXPECT_EQ(ints(call("relu", {make(DType::Bool, {2}, {1, 0})}, DType::I64, {2})), (std::vector<int64_t>{1, 0}));
}

TEST(OpsElementwise, WhereAndClipBroadcast) {
  Tensor cond = make(DType::Bool, {2, 1}, {1, 0});
  Tensor a = make(DType::I32, {1, 3}, {1, 2, 3});
  Tensor b = make(DType::I32, {}, {-1});
  Tensor w = call("where", {cond, a, b}, DType::I32);
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(ints(w), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  Tensor x = make(DType::F32, {5}, {-5, 0.5, 5, kNaN, 2});
  expect_values(call("clip", {x, make(DType::F32, {}, {0}), make(DType::F32, {}, {1})}, DType::F32),
                {0, 0.5, 1, kNaN, 1});
  EXPECT_EQ(
      ints(call("clip",
                {make(DType::U8, {3}, {0, 100, 255}), make(DType::U8, {3}, {10, 10, 10}), make(DType::U8, {}, {200})},
                DType::U8)),
      (std::vector<int64_t>{10, 100, 200}));
  Tensor s = call(
      "where",
      {make(DType::Bool, {2}, {1, 0}), Tensor::from_strings({"yes"}, {}), Tensor::from_strings({"no", "nope"}, {2})},
      DType::Bytes);
  EXPECT_EQ(s.str(0), "yes");
  EXPECT_EQ(s.str(1), "nope");
}

}  // namespace
}  // namespace pipec

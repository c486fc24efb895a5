// Constant folding (compiler/sema/const_eval.cpp): Python integer semantics for // and %, overflow and
// division by zero reported instead of wrapped, casts that truncate toward zero (and saturate, from
// floats, as the runtime does).
#include "compiler/sema/const_eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace pipec {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Value I(int64_t v, DType dt = DType::I64) { return Value::make_int(v, dt); }
Value F(double v, DType dt = DType::F64) { return Value::make_float(v, dt); }

int64_t fold_int(BinaryOp op, int64_t a, int64_t b, DType dt = DType::I64) {
  FoldResult r = fold_binary(op, I(a), I(b), dt, dt);
  EXPECT_EQ(r.error, FoldError::None) << a << " " << binary_op_spelling(op) << " " << b;
  EXPECT_TRUE(r.value.has_value());
  return r.value ? r.value->i : 0;
}

FoldError fold_error(BinaryOp op, int64_t a, int64_t b) {
  return fold_binary(op, I(a), I(b), DType::I64, DType::I64).error;
}

TEST(ConstEval, FloorDivisionRoundsTowardNegativeInfinity) {
  EXPECT_EQ(fold_int(BinaryOp::FloorDiv, 7, 2), 3);
  EXPECT_EQ(fold_int(BinaryOp::FloorDiv, -7, 2), -4);
  EXPECT_EQ(fold_int(BinaryOp::FloorDiv, 7, -2), -4);
  EXPECT_EQ(fold_int(BinaryOp::FloorDiv, -7, -2), 3);
  EXPECT_EQ(fold_int(BinaryOp::FloorDiv, 6, -3), -2);
  EXPECT_EQ(fold_int(BinaryOp::FloorDiv, 0, -3), 0);
}

TEST(ConstEval, ModuloTakesTheDivisorsSign) {
  EXPECT_EQ(fold_int(BinaryOp::Mod, 7, 3), 1);
  EXPECT_EQ(fold_int(BinaryOp::Mod, -7, 3), 2);
  EXPECT_EQ(fold_int(BinaryOp::Mod, 7, -3), -2);
  EXPECT_EQ(fold_int(BinaryOp::Mod, -7, -3), -1);
  EXPECT_EQ(fold_int(BinaryOp::Mod, 6, -3), 0);
  // a == (a // b) * b + a % b for every sign combination.
  for (int64_t a : {-9, -7, -1, 0, 1, 7, 9})
    for (int64_t b : {-4, -3, -1, 1, 3, 4})
      EXPECT_EQ(fold_int(BinaryOp::FloorDiv, a, b) * b + fold_int(BinaryOp::Mod, a, b), a) << a << " " << b;
}

TEST(ConstEval, FloatFloorDivisionAndModulo) {
  auto fd = fold_binary(BinaryOp::FloorDiv, F(-7.5), F(2), DType::F64, DType::F64);
  EXPECT_DOUBLE_EQ(fd.value->f, -4.0);
  auto m = fold_binary(BinaryOp::Mod, F(-7.5), F(2), DType::F64, DType::F64);
  EXPECT_DOUBLE_EQ(m.value->f, 0.5);
  auto m2 = fold_binary(BinaryOp::Mod, F(7.5), F(-2), DType::F64, DType::F64);
  EXPECT_DOUBLE_EQ(m2.value->f, -0.5);
}

TEST(ConstEval, IntegerDivisionByZeroIsReported) {
  EXPECT_EQ(fold_error(BinaryOp::FloorDiv, 1, 0), FoldError::DivisionByZero);
  EXPECT_EQ(fold_error(BinaryOp::Mod, 5, 0), FoldError::DivisionByZero);
  EXPECT_EQ(fold_binary(BinaryOp::FloorDiv, I(1, DType::U8), I(0, DType::U8), DType::U8, DType::U8).error,
            FoldError::DivisionByZero);
}

TEST(ConstEval, FloatDivisionByZeroFollowsIeee) {
  auto r = fold_binary(BinaryOp::Div, F(1), F(0), DType::F64, DType::F64);
  EXPECT_EQ(r.error, FoldError::None);
  EXPECT_TRUE(std::isinf(r.value->f));
  auto n = fold_binary(BinaryOp::Div, F(0), F(0), DType::F64, DType::F64);
  EXPECT_TRUE(std::isnan(n.value->f));
  // `7 / 0` between integers is true division: an f64 infinity, not an error.
  auto t = fold_binary(BinaryOp::Div, I(7), I(0), DType::F64, DType::F64);
  EXPECT_EQ(t.error, FoldError::None);
  EXPECT_TRUE(std::isinf(t.value->f));
}

TEST(ConstEval, OverflowIsDetected) {
  EXPECT_EQ(fold_error(BinaryOp::Add, kMax, 1), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::Sub, kMin, 1), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::Mul, 3037000500, 3037000500), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::Pow, 2, 63), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::Pow, 10, 19), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::FloorDiv, kMin, -1), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::Mod, kMin, -1), FoldError::Overflow);
  EXPECT_EQ(fold_unary(UnaryOp::Neg, I(kMin), DType::I64).error, FoldError::Overflow);
  EXPECT_EQ(fold_call("abs", {I(kMin)}, DType::I64).error, FoldError::Overflow);
  // Just inside the range.
  EXPECT_EQ(fold_int(BinaryOp::Add, kMax - 1, 1), kMax);
  EXPECT_EQ(fold_int(BinaryOp::Pow, 2, 62), int64_t(1) << 62);
  EXPECT_EQ(fold_int(BinaryOp::Pow, -2, 63), kMin);
  EXPECT_EQ(fold_int(BinaryOp::Mul, -1, kMax), -kMax);
}

TEST(ConstEval, PowerOfTrivialBasesDoesNotLoop) {
  // A naive loop would run 10**18 times.
  EXPECT_EQ(fold_int(BinaryOp::Pow, 1, 1000000000000000000), 1);
  EXPECT_EQ(fold_int(BinaryOp::Pow, -1, 1000000000000000001), -1);
  EXPECT_EQ(fold_int(BinaryOp::Pow, 0, 1000000000000000000), 0);
  EXPECT_EQ(fold_int(BinaryOp::Pow, 0, 0), 1);
  EXPECT_EQ(fold_int(BinaryOp::Pow, 3, 0), 1);
  // A negative exponent has no integer result; it is left unfolded.
  EXPECT_EQ(fold_error(BinaryOp::Pow, 2, -1), FoldError::NotFoldable);
}

TEST(ConstEval, NarrowTypesWrapLikeTheRuntime) {
  auto r = fold_binary(BinaryOp::Add, I(200, DType::U8), I(100, DType::U8), DType::U8, DType::U8);
  EXPECT_EQ(r.error, FoldError::None);
  EXPECT_EQ(r.value->i, 44);
  EXPECT_EQ(r.value->dtype, DType::U8);
  auto s = fold_binary(BinaryOp::Add, I(127, DType::I8), I(1, DType::I8), DType::I8, DType::I8);
  EXPECT_EQ(s.value->i, -128);
}

TEST(ConstEval, Shifts) {
  EXPECT_EQ(fold_int(BinaryOp::Shl, 1, 4), 16);
  EXPECT_EQ(fold_int(BinaryOp::Shr, 256, 4), 16);
  EXPECT_EQ(fold_int(BinaryOp::Shr, -16, 2), -4);  // arithmetic shift keeps the sign
  EXPECT_EQ(fold_int(BinaryOp::Shr, -1, 70), -1);  // past the width: all sign bits
  EXPECT_EQ(fold_int(BinaryOp::Shr, 5, 70), 0);
  EXPECT_EQ(fold_int(BinaryOp::Shl, 0, 70), 0);
  EXPECT_EQ(fold_int(BinaryOp::Shl, 5, -1), 0);  // a negative count shifts everything out, as at run time
  EXPECT_EQ(fold_int(BinaryOp::Shl, -1, 3), -8);
  EXPECT_EQ(fold_int(BinaryOp::Shl, 1, 62), int64_t(1) << 62);
  // Bits shifted out of an i64 are an overflow.
  EXPECT_EQ(fold_error(BinaryOp::Shl, 1, 63), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::Shl, 3, 62), FoldError::Overflow);
  EXPECT_EQ(fold_error(BinaryOp::Shl, 1, 64), FoldError::Overflow);
  // A narrow type wraps.
  auto u = fold_binary(BinaryOp::Shl, I(1, DType::U8), I(9, DType::U8), DType::U8, DType::U8);
  EXPECT_EQ(u.value->i, 0);
  auto v = fold_binary(BinaryOp::Shl, I(3, DType::U8), I(7, DType::U8), DType::U8, DType::U8);
  EXPECT_EQ(v.value->i, 128);
}

TEST(ConstEval, BitOps) {
  EXPECT_EQ(fold_int(BinaryOp::BitAnd, 6, 3), 2);
  EXPECT_EQ(fold_int(BinaryOp::BitXor, 6, 3), 5);
  EXPECT_EQ(fold_unary(UnaryOp::BitNot, I(0), DType::I64).value->i, -1);
  EXPECT_EQ(fold_unary(UnaryOp::BitNot, I(0, DType::U8), DType::U8).value->i, 255);
  auto b = fold_binary(BinaryOp::BitXor, Value::make_bool(true), Value::make_bool(false), DType::Bool, DType::Bool);
  ASSERT_TRUE(b.value);
  EXPECT_EQ(b.value->kind, Value::Bool);
  EXPECT_TRUE(b.value->b);
}

TEST(ConstEval, ComparisonsOfLargeIntegersAreExact) {
  int64_t big = (int64_t(1) << 53) + 1;
  auto eq = fold_binary(BinaryOp::Eq, I(big), I(big - 1), DType::I64, DType::Bool);
  EXPECT_FALSE(eq.value->b);
  auto lt = fold_binary(BinaryOp::Lt, I(big - 1), I(big), DType::I64, DType::Bool);
  EXPECT_TRUE(lt.value->b);
  auto mixed = fold_binary(BinaryOp::Lt, I(1), F(1.5), DType::F64, DType::Bool);
  EXPECT_TRUE(mixed.value->b);
  auto logic = fold_binary(BinaryOp::And, Value::make_bool(true), Value::make_bool(false), DType::Bool, DType::Bool);
  EXPECT_FALSE(logic.value->b);
}

// Both operands are converted to the dtype the run time computes in before the operator applies, so a
// folded constant is the value the same expression computes at run time.
TEST(ConstEval, OperandsAreConvertedToTheComputeDtypeFirst) {
  const Value t = Value::make_bool(true);
  // bool(1) == 2: 2 becomes true (a bool compared with an integer literal, docs/language.md §6.3).
  EXPECT_TRUE(fold_binary(BinaryOp::Eq, t, I(2), DType::Bool, DType::Bool).value->b);
  EXPECT_FALSE(fold_binary(BinaryOp::Lt, t, I(3), DType::Bool, DType::Bool).value->b);  // true < true
  EXPECT_TRUE(fold_binary(BinaryOp::BitAnd, t, I(2), DType::Bool, DType::Bool).value->b);
  // Bool arithmetic computes in i64 with the literal's value.
  EXPECT_EQ(fold_binary(BinaryOp::Add, t, I(2), DType::I64, DType::I64).value->i, 3);
  // u8(200) < 300: 300 is 44 in u8.
  EXPECT_FALSE(fold_binary(BinaryOp::Lt, I(200, DType::U8), I(300), DType::U8, DType::Bool).value->b);
  // f32(0.1) == 0.1 compares two f32 values.
  EXPECT_TRUE(fold_binary(BinaryOp::Eq, convert_value(F(0.1), DType::F32), F(0.1), DType::F32, DType::Bool).value->b);
}

TEST(ConstEval, U64ComparesDividesAndShiftsUnsignedAndWraps) {
  const Value max = I(-1, DType::U64);  // 2^64 - 1, its bits in the i64
  EXPECT_TRUE(fold_binary(BinaryOp::Gt, max, I(1, DType::U64), DType::U64, DType::Bool).value->b);
  EXPECT_EQ(fold_binary(BinaryOp::FloorDiv, max, I(2, DType::U64), DType::U64, DType::U64).value->i,
            static_cast<int64_t>(~uint64_t{0} / 2));
  EXPECT_EQ(fold_binary(BinaryOp::Shr, max, I(60, DType::U64), DType::U64, DType::U64).value->i, 15);
  auto wrapped = fold_binary(BinaryOp::Mul, I(int64_t{1} << 62, DType::U64), I(4, DType::U64), DType::U64, DType::U64);
  EXPECT_EQ(wrapped.error, FoldError::None);
  EXPECT_EQ(wrapped.value->i, 0);
  // A narrow integer's power wraps too; only i64 reports overflow.
  EXPECT_EQ(fold_binary(BinaryOp::Pow, I(3, DType::I32), I(50, DType::I32), DType::I32, DType::I32).error,
            FoldError::None);
  EXPECT_EQ(fold_error(BinaryOp::Pow, 3, 50), FoldError::Overflow);
}

TEST(ConstEval, MaxAndMinFollowTheRunTimeKernel) {
  const double nan = std::nan("");
  // A NaN on either side wins.
  EXPECT_TRUE(std::isnan(fold_call("max", {F(nan), F(1)}, DType::F64).value->f));
  EXPECT_TRUE(std::isnan(fold_call("min", {F(1), F(nan)}, DType::F64).value->f));
  // Of two equal values, the second: max(-0.0, 0.0) is 0.0.
  EXPECT_FALSE(std::signbit(fold_call("max", {F(-0.0), F(0.0)}, DType::F64).value->f));
  // In the result's dtype: max(u8(200), 300) compares 200 with 44.
  EXPECT_EQ(fold_call("max", {I(200, DType::U8), I(300)}, DType::U8).value->i, 200);
  EXPECT_TRUE(fold_call("max", {Value::make_bool(false), I(2)}, DType::Bool).value->b);
  EXPECT_TRUE(std::isnan(fold_call("sign", {F(nan)}, DType::F64).value->f));
}

TEST(ConstEval, FloatResultsAreRoundedToTheirDtype) {
  auto r = fold_binary(BinaryOp::Div, F(1), F(3), DType::F32, DType::F32);
  EXPECT_EQ(r.value->dtype, DType::F32);
  EXPECT_EQ(r.value->f, static_cast<double>(1.0f / 3.0f));
  auto p = fold_binary(BinaryOp::Pow, F(2), F(0.5), DType::F64, DType::F64);
  EXPECT_DOUBLE_EQ(p.value->f, std::sqrt(2.0));
}

// f16 and bf16 constants hold values of their precision, rounded as the runtime rounds them, so folded
// arithmetic on them is the runtime's.
TEST(ConstEval, HalfPrecisionResultsAreRoundedAsTheRuntimeRoundsThem) {
  EXPECT_EQ(convert_value(F(0.1), DType::F16).f, 0.0999755859375);
  EXPECT_TRUE(std::isinf(convert_value(F(100000.0), DType::F16).f));
  EXPECT_EQ(convert_value(F(1.001), DType::BF16).f, 1.0);
  EXPECT_EQ(convert_value(I(2049), DType::F16).f, 2048.0);
  auto p = fold_binary(BinaryOp::Mul, convert_value(F(0.1), DType::F16), convert_value(I(3), DType::F16), DType::F16,
                       DType::F16);
  ASSERT_TRUE(p.value);
  EXPECT_EQ(p.value->f, 0.2998046875);
  // u64 constants keep their bits in the i64: 2^64 - 1 is not -1.
  EXPECT_EQ(convert_value(I(-1, DType::U64), DType::F64).f, 18446744073709551616.0);
}

TEST(ConstEval, CastsTruncateTowardZero) {
  EXPECT_EQ(convert_value(F(2.7), DType::I64).i, 2);
  EXPECT_EQ(convert_value(F(-2.7), DType::I64).i, -2);
  EXPECT_EQ(convert_value(F(-0.5), DType::I32).i, 0);
  EXPECT_EQ(convert_value(I(300), DType::U8).i, 44);
  EXPECT_EQ(convert_value(I(-1), DType::U8).i, 255);
  EXPECT_EQ(convert_value(I(-1), DType::U16).i, 65535);
  EXPECT_EQ(convert_value(I(128), DType::I8).i, -128);
  EXPECT_TRUE(convert_value(I(2), DType::Bool).b);
  EXPECT_FALSE(convert_value(F(0.0), DType::Bool).b);
  EXPECT_EQ(convert_value(Value::make_bool(true), DType::F32).f, 1.0);
  EXPECT_EQ(convert_value(F(0.1), DType::F32).f, static_cast<double>(0.1f));
  // A float outside the target's range saturates, and NaN is 0: what the runtime's casts compute
  // (runtime/core/dtype_dispatch.h), so a folded cast equals the same cast at run time.
  EXPECT_EQ(convert_value(F(1e300), DType::I64).i, kMax);
  EXPECT_EQ(convert_value(F(9.25e18), DType::I64).i, kMax);
  EXPECT_EQ(convert_value(F(-1e300), DType::I64).i, kMin);
  EXPECT_EQ(convert_value(F(-9223372036854775808.0), DType::I64).i, kMin);
  EXPECT_EQ(convert_value(F(std::nan("")), DType::I32).i, 0);
  EXPECT_EQ(convert_value(F(300.0), DType::I8).i, 127);
  EXPECT_EQ(convert_value(F(-300.0), DType::I8).i, -128);
  EXPECT_EQ(convert_value(F(-1.0), DType::U8).i, 0);
  EXPECT_EQ(convert_value(F(1e10), DType::U8).i, 255);
  EXPECT_EQ(convert_value(F(1e10), DType::I32).i, 2147483647);
  EXPECT_EQ(convert_value(F(-5.0), DType::U64).i, 0);
  EXPECT_EQ(static_cast<uint64_t>(convert_value(F(1e30), DType::U64).i), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(static_cast<uint64_t>(convert_value(F(1.5e19), DType::U64).i), 15000000000000000000ull);
  // Strings and lists pass through unchanged.
  EXPECT_EQ(convert_value(Value::make_string("x"), DType::F32).s, "x");
}

TEST(ConstEval, CallsFold) {
  EXPECT_EQ(fold_call("i64", {F(-2.7)}, DType::I64).value->i, -2);
  EXPECT_EQ(fold_call("u8", {I(256)}, DType::U8).value->i, 0);
  EXPECT_DOUBLE_EQ(fold_call("tanh", {F(0)}, DType::F64).value->f, 0.0);
  EXPECT_DOUBLE_EQ(fold_call("sqrt", {I(16)}, DType::F32).value->f, 4.0);
  EXPECT_EQ(fold_call("abs", {I(-5)}, DType::I64).value->i, 5);
  EXPECT_DOUBLE_EQ(fold_call("sign", {F(-3)}, DType::F64).value->f, -1.0);
  EXPECT_EQ(fold_call("max", {I(3), I(7)}, DType::I64).value->i, 7);
  EXPECT_EQ(fold_call("min", {I(3), I(7)}, DType::I64).value->i, 3);
  EXPECT_DOUBLE_EQ(fold_call("max", {F(0.0), I(-2)}, DType::F64).value->f, 0.0);
  EXPECT_DOUBLE_EQ(fold_call("round", {F(2.5)}, DType::F64).value->f, 2.0);  // half to even
  EXPECT_DOUBLE_EQ(fold_call("floor", {F(-0.5)}, DType::F64).value->f, -1.0);
  EXPECT_EQ(fold_call("reshape", {I(1), I(2)}, DType::I64).error, FoldError::NotFoldable);
  EXPECT_EQ(fold_call("tanh", {Value::make_string("x")}, DType::F32).error, FoldError::NotFoldable);
}

TEST(ConstEval, UnaryOps) {
  EXPECT_EQ(fold_unary(UnaryOp::Neg, I(5), DType::I64).value->i, -5);
  EXPECT_DOUBLE_EQ(fold_unary(UnaryOp::Neg, F(0.5), DType::F64).value->f, -0.5);
  EXPECT_EQ(fold_unary(UnaryOp::Neg, I(1, DType::U8), DType::U8).value->i, 255);
  EXPECT_EQ(fold_unary(UnaryOp::Plus, I(5), DType::I64).value->i, 5);
  EXPECT_TRUE(fold_unary(UnaryOp::Not, Value::make_bool(false), DType::Bool).value->b);
  EXPECT_EQ(fold_unary(UnaryOp::Neg, Value::make_string("x"), DType::I64).error, FoldError::NotFoldable);
}

}  // namespace
}  // namespace pipec

// Pins the dtype promotion and broadcasting rules of compiler/sema/promotion.cpp (docs/language.md,
// "Promotion").
#include "compiler/sema/promotion.h"

#include <gtest/gtest.h>

namespace pipec {
namespace {

// The promoted dtype of two strong (typed) operands.
DType strong(DType a, DType b) {
  auto p = promote(a, false, b, false);
  EXPECT_TRUE(p.has_value());
  EXPECT_FALSE(p->weak);
  return p->dtype;
}

TEST(Promotion, SameDtypeStaysTheSame) {
  for (DType t : {DType::Bool, DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32, DType::U64,
                  DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64})
    EXPECT_EQ(strong(t, t), t) << dtype_name(t);
}

TEST(Promotion, IsSymmetric) {
  const DType all[] = {DType::Bool, DType::U8,  DType::I8,  DType::U16,  DType::I16, DType::U32, DType::I32,
                       DType::U64,  DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64};
  for (DType a : all)
    for (DType b : all) {
      EXPECT_EQ(strong(a, b), strong(b, a)) << dtype_name(a) << " " << dtype_name(b);
      for (bool aw : {false, true})
        for (bool bw : {false, true}) {
          auto x = promote(a, aw, b, bw), y = promote(b, bw, a, aw);
          ASSERT_TRUE(x && y);
          EXPECT_EQ(x->dtype, y->dtype);
          EXPECT_EQ(x->weak, y->weak);
        }
    }
}

TEST(Promotion, WeakLiteralAdoptsTheOtherDtype) {
  // `u8_tensor + 1` stays u8, `f16_tensor * 2.5` stays f16.
  auto p = promote(DType::U8, false, DType::I64, true);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->dtype, DType::U8);
  EXPECT_FALSE(p->weak);
  EXPECT_EQ(promote(DType::F16, false, DType::F64, true)->dtype, DType::F16);
  EXPECT_EQ(promote(DType::BF16, false, DType::I64, true)->dtype, DType::BF16);
  EXPECT_EQ(promote(DType::I64, true, DType::I8, false)->dtype, DType::I8);
  // A weak bool (`true`) adopts too.
  EXPECT_EQ(promote(DType::Bool, true, DType::I32, false)->dtype, DType::I32);
}

TEST(Promotion, FloatLiteralWithIntegerTensorGivesF32) {
  for (DType t : {DType::U8, DType::I8, DType::I32, DType::U64, DType::I64, DType::Bool}) {
    auto p = promote(t, false, DType::F64, true);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->dtype, DType::F32) << dtype_name(t);
    EXPECT_FALSE(p->weak);
  }
}

TEST(Promotion, TwoWeakLiteralsStayWeak) {
  auto ints = promote(DType::I64, true, DType::I64, true);
  EXPECT_EQ(ints->dtype, DType::I64);
  EXPECT_TRUE(ints->weak);
  auto mixed = promote(DType::I64, true, DType::F64, true);
  EXPECT_EQ(mixed->dtype, DType::F64);
  EXPECT_TRUE(mixed->weak);
  auto bools = promote(DType::Bool, true, DType::Bool, true);
  EXPECT_EQ(bools->dtype, DType::Bool);
  EXPECT_TRUE(bools->weak);
  // An integer literal meeting a bool becomes a bool, whether the bool is a tensor or a constant:
  // `(1 < 2) == 2` compares as `(x < 2) == 2` does.
  auto bool_int = promote(DType::Bool, true, DType::I64, true);
  EXPECT_EQ(bool_int->dtype, DType::Bool);
  EXPECT_TRUE(bool_int->weak);
  EXPECT_EQ(promote(DType::Bool, false, DType::I64, true)->dtype, DType::Bool);
  EXPECT_EQ(promote(DType::Bool, true, DType::F64, true)->dtype, DType::F64);
}

TEST(Promotion, OperandsComputeInThePromotedDtypeExceptDivisionAndBoolArithmetic) {
  EXPECT_EQ(binary_operand_dtype(BinaryOp::Lt, DType::Bool, DType::Bool), DType::Bool);
  EXPECT_EQ(binary_operand_dtype(BinaryOp::Lt, DType::U8, DType::Bool), DType::U8);
  EXPECT_EQ(binary_operand_dtype(BinaryOp::BitAnd, DType::Bool, DType::Bool), DType::Bool);
  // `(x > 0) + 5` adds 5, not true; `i32 / i32` divides in f32.
  EXPECT_EQ(binary_operand_dtype(BinaryOp::Add, DType::Bool, DType::I64), DType::I64);
  EXPECT_EQ(binary_operand_dtype(BinaryOp::Div, DType::I32, DType::F32), DType::F32);
  EXPECT_EQ(binary_operand_dtype(BinaryOp::Mul, DType::F16, DType::F16), DType::F16);
}

TEST(Promotion, SameSignednessTakesTheWider) {
  EXPECT_EQ(strong(DType::U8, DType::U32), DType::U32);
  EXPECT_EQ(strong(DType::I8, DType::I64), DType::I64);
  EXPECT_EQ(strong(DType::I16, DType::I32), DType::I32);
}

TEST(Promotion, SignedUnsignedMixingNeedsAWiderSignedType) {
  EXPECT_EQ(strong(DType::U8, DType::I8), DType::I16);
  EXPECT_EQ(strong(DType::U8, DType::I16), DType::I16);
  EXPECT_EQ(strong(DType::U8, DType::I32), DType::I32);
  EXPECT_EQ(strong(DType::U16, DType::I8), DType::I32);
  EXPECT_EQ(strong(DType::U16, DType::I16), DType::I32);
  EXPECT_EQ(strong(DType::U32, DType::I32), DType::I64);
  EXPECT_EQ(strong(DType::U32, DType::I8), DType::I64);
  // Nothing is wider than 64 bits: u64 with a signed type is i64 (values above 2**63 do not fit).
  EXPECT_EQ(strong(DType::U64, DType::I64), DType::I64);
  EXPECT_EQ(strong(DType::U64, DType::I8), DType::I64);
}

TEST(Promotion, FloatsJoin) {
  EXPECT_EQ(strong(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(strong(DType::F16, DType::F32), DType::F32);
  EXPECT_EQ(strong(DType::BF16, DType::F64), DType::F64);
  EXPECT_EQ(strong(DType::F32, DType::F64), DType::F64);
}

TEST(Promotion, FloatWithIntegerKeepsTheFloat) {
  EXPECT_EQ(strong(DType::F16, DType::I64), DType::F16);
  EXPECT_EQ(strong(DType::U8, DType::BF16), DType::BF16);
  EXPECT_EQ(strong(DType::I32, DType::F32), DType::F32);
}

TEST(Promotion, BoolTakesTheOtherDtype) {
  EXPECT_EQ(strong(DType::Bool, DType::U8), DType::U8);
  EXPECT_EQ(strong(DType::F32, DType::Bool), DType::F32);
  EXPECT_EQ(strong(DType::Bool, DType::Bool), DType::Bool);
}

TEST(Promotion, BytesMixOnlyWithBytes) {
  EXPECT_FALSE(promote(DType::Bytes, false, DType::I64, true));
  EXPECT_FALSE(promote(DType::U8, false, DType::Bytes, false));
  EXPECT_FALSE(promote(DType::Bytes, false, DType::F64, true));
  auto same = promote(DType::Bytes, false, DType::Bytes, false);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->dtype, DType::Bytes);
}

TEST(Promotion, TrueDivision) {
  EXPECT_EQ(true_division_dtype(DType::I64), DType::F64);
  EXPECT_EQ(true_division_dtype(DType::U64), DType::F64);
  EXPECT_EQ(true_division_dtype(DType::I32), DType::F32);
  EXPECT_EQ(true_division_dtype(DType::U8), DType::F32);
  EXPECT_EQ(true_division_dtype(DType::Bool), DType::F32);
  EXPECT_EQ(true_division_dtype(DType::F16), DType::F16);
  EXPECT_EQ(true_division_dtype(DType::F64), DType::F64);
}

using Shape = std::vector<int64_t>;

TEST(Broadcast, AlignsTrailingDimensions) {
  EXPECT_EQ(broadcast_shapes({4, 3}, {3}), Shape({4, 3}));
  EXPECT_EQ(broadcast_shapes({3}, {4, 3}), Shape({4, 3}));
  EXPECT_EQ(broadcast_shapes({4, 1}, {1, 3}), Shape({4, 3}));
  EXPECT_EQ(broadcast_shapes({1, 4, 3}, {4, 1, 3}), Shape({4, 4, 3}));
  EXPECT_EQ(broadcast_shapes({8, 8, 24}, {24}), Shape({8, 8, 24}));
}

TEST(Broadcast, ScalarsBroadcastWithAnything) {
  EXPECT_EQ(broadcast_shapes({}, {}), Shape({}));
  EXPECT_EQ(broadcast_shapes({}, {2, 5}), Shape({2, 5}));
  EXPECT_EQ(broadcast_shapes({7}, {}), Shape({7}));
}

TEST(Broadcast, ZeroSizedDimensions) {
  EXPECT_EQ(broadcast_shapes({0}, {1}), Shape({0}));
  EXPECT_EQ(broadcast_shapes({0, 3}, {3}), Shape({0, 3}));
  EXPECT_FALSE(broadcast_shapes({0}, {2}));
}

TEST(Broadcast, MismatchIsRefused) {
  EXPECT_FALSE(broadcast_shapes({4, 3}, {2}));
  EXPECT_FALSE(broadcast_shapes({2, 3}, {3, 3}));
  EXPECT_FALSE(broadcast_shapes({5}, {4, 3}));
}

TEST(Broadcast, UnknownDimensions) {
  // Unknown with a known size other than 1 takes the known size; with 1 or unknown it stays unknown.
  EXPECT_EQ(broadcast_shapes({-1}, {3}), Shape({3}));
  EXPECT_EQ(broadcast_shapes({3}, {-1}), Shape({3}));
  EXPECT_EQ(broadcast_shapes({-1}, {1}), Shape({-1}));
  EXPECT_EQ(broadcast_shapes({1}, {-1}), Shape({-1}));
  EXPECT_EQ(broadcast_shapes({-1}, {-1}), Shape({-1}));
  EXPECT_EQ(broadcast_shapes({-1, 3}, {5, 1}), Shape({5, 3}));
  EXPECT_EQ(broadcast_shapes({-1, 3}, {3}), Shape({-1, 3}));
}

TEST(FitShape, DeclaredUnknownAcceptsAnySize) {
  EXPECT_EQ(fit_shape({4}, {4}), ShapeFit::Fits);
  EXPECT_EQ(fit_shape({-1}, {4}), ShapeFit::Fits);
  EXPECT_EQ(fit_shape({-1}, {-1}), ShapeFit::Fits);
  EXPECT_EQ(fit_shape({}, {}), ShapeFit::Fits);
  EXPECT_EQ(fit_shape({4}, {-1}), ShapeFit::Ragged);
  EXPECT_EQ(fit_shape({4, 3}, {-1, 2}), ShapeFit::Mismatch);
  EXPECT_EQ(fit_shape({4}, {5}), ShapeFit::Mismatch);
  EXPECT_EQ(fit_shape({4}, {4, 1}), ShapeFit::Mismatch);
}

}  // namespace
}  // namespace pipec

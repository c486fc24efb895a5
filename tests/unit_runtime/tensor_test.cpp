#include "runtime/core/tensor.h"

#include <gtest/gtest.h>

namespace pipec {

TEST(Tensor, ShapeAndBytes) {
  Tensor t = Tensor::zeros(DType::F32, {2, 3});
  EXPECT_EQ(t.num_elements(), 6);
  EXPECT_EQ(t.byte_size(), 24u);
  t.data<float>()[5] = 1.5f;
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.data<float>()[5], 1.5f);  // shares storage
  EXPECT_THROW(t.reshaped({4, 2}), std::invalid_argument);
}

TEST(Tensor, Strings) {
  Tensor t = Tensor::from_strings({"ab", "", "cde"}, {3});
  EXPECT_EQ(t.str(0), "ab");
  EXPECT_EQ(t.str(1), "");
  EXPECT_EQ(t.str(2), "cde");
  EXPECT_TRUE(t.equals(Tensor::from_strings({"ab", "", "cde"}, {3})));
  EXPECT_FALSE(t.equals(Tensor::from_strings({"ab", "x", "cde"}, {3})));
  EXPECT_THROW(Tensor::from_strings({"a"}, {2}), std::invalid_argument);
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::Bool, DType::U8, DType::I64, DType::F32, DType::BF16, DType::Bytes})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("float").has_value());
  EXPECT_EQ(dtype_size(DType::F64), 8u);
}

}  // namespace pipec

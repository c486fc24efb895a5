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

// A GPU map's results become tensors over the pinned blocks the device copied them into: the tensor
// (and every reshaped view of it) reads that storage, and the block goes back to its owner only when
// the last of them is gone.
TEST(Tensor, AdoptedStorageIsReadInPlaceAndFreedByTheLastView) {
  int freed = 0;
  auto* block = new uint8_t[6 * sizeof(float)];
  std::shared_ptr<uint8_t[]> storage(block, [&freed](uint8_t* p) {
    ++freed;
    delete[] p;
  });
  for (int i = 0; i < 6; ++i) reinterpret_cast<float*>(block)[i] = static_cast<float>(i) * 1.5f;
  {
    Tensor t = Tensor::adopt(DType::F32, {2, 3}, std::move(storage));
    EXPECT_EQ(t.raw(), block);
    EXPECT_EQ(t.data<float>()[5], 7.5f);
    Tensor view = t.reshaped({1, 2, 3});
    t = Tensor();
    EXPECT_EQ(freed, 0);
    EXPECT_EQ(view.data<float>()[4], 6.0f);
  }
  EXPECT_EQ(freed, 1);
  EXPECT_THROW(Tensor::adopt(DType::Bytes, {1}, std::shared_ptr<uint8_t[]>(new uint8_t[1])), std::logic_error);
}

// A row view reads the parent's storage (no copy) and keeps it alive after the parent is gone.
TEST(Tensor, RowViewSharesTheStorageOfItsRow) {
  Tensor t = Tensor::empty(DType::I32, {3, 2, 2});
  for (int i = 0; i < 12; ++i) t.data<int32_t>()[i] = i;
  Tensor row = t.row_view(1);
  EXPECT_EQ(row.shape(), (Shape{2, 2}));
  EXPECT_EQ(row.raw(), t.raw() + 4 * sizeof(int32_t));
  t = Tensor();
  EXPECT_EQ(row.data<int32_t>()[0], 4);
  EXPECT_EQ(row.data<int32_t>()[3], 7);
  EXPECT_THROW(row.row_view(2), std::logic_error);
  EXPECT_THROW(Tensor::from_strings({"a"}, {1}).row_view(0), std::logic_error);
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::Bool, DType::U8, DType::I64, DType::F32, DType::BF16, DType::Bytes})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("float").has_value());
  EXPECT_EQ(dtype_size(DType::F64), 8u);
}

}  // namespace pipec

// The per-row view of batches that maps moved after their batch run on.
#include <gtest/gtest.h>

#include "runtime/exec/stages/row_view.h"

namespace pipec {
namespace {

Chunk batches(int64_t b, int64_t k, int64_t first_index) {
  Chunk c;
  c.rows = b;
  c.first_index = first_index;
  c.epoch = 4;
  Tensor x = Tensor::empty(DType::I32, {b, k, 2});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<int32_t>()[i] = static_cast<int32_t>(i);
  c.columns.push_back(Column{false, x, {}});
  c.columns.push_back(
      Column{false, Tensor::from_strings(std::vector<std::string>(static_cast<size_t>(b * k), "s"), {b, k}), {}});
  return c;
}

TEST(RowView, RowsKeepTheirElementIndexAndEpoch) {
  Chunk rows = batches_as_rows(batches(3, 4, 5), 4);
  EXPECT_EQ(rows.rows, 12);
  EXPECT_EQ(rows.first_index, 20);  // batch 5 of 4 starts at element 20
  EXPECT_EQ(rows.epoch, 4);
  EXPECT_EQ(rows.columns[0].dense.shape(), (Shape{12, 2}));
  EXPECT_EQ(rows.columns[0].dense.data<int32_t>()[23], 23);  // a view: the same order, no copy needed
  EXPECT_EQ(rows.columns[1].dense.shape(), (Shape{12}));
  auto back = rows_as_batches(rows.columns, 3);
  EXPECT_EQ(back[0].dense.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(back[1].dense.shape(), (Shape{3, 4}));
}

TEST(RowView, TheShortFinalBatchIsNumberedAsIfFull) {
  Chunk rows = batches_as_rows(batches(1, 3, 7), 8);
  EXPECT_EQ(rows.rows, 3);
  EXPECT_EQ(rows.first_index, 56);
}

TEST(RowView, RefusesWhatIsNotAChunkOfBatches) {
  EXPECT_THROW(batches_as_rows(batches(2, 3, 0), 8), std::runtime_error);  // short batches in a group
  Chunk ragged = batches(1, 2, 0);
  ragged.columns[0] = Column{true, {}, {Tensor::empty(DType::I32, {2})}};
  EXPECT_THROW(batches_as_rows(ragged, 2), std::runtime_error);
  Chunk flat;
  flat.rows = 2;
  flat.columns.push_back(Column{false, Tensor::empty(DType::I32, {2}), {}});
  EXPECT_THROW(batches_as_rows(flat, 2), std::runtime_error);
}

}  // namespace
}  // namespace pipec

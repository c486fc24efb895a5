// ChunkBuilder: the parallel copy of large row ranges, layout checks, snapshots, and byte strings kept
// one tensor per row (a shuffle buffer) turned back into a dense column.
#include "runtime/exec/chunk_builder.h"

#include <gtest/gtest.h>

namespace pipec {
namespace {

Chunk numbered(int64_t rows, int64_t width, int64_t base) {
  Chunk c;
  c.rows = rows;
  Tensor big = Tensor::empty(DType::F32, {rows, width});
  for (int64_t i = 0; i < rows * width; ++i) big.data<float>()[i] = static_cast<float>(base + i);
  Tensor id = Tensor::empty(DType::I64, {rows});
  for (int64_t r = 0; r < rows; ++r) id.data<int64_t>()[r] = base + r;
  c.columns.push_back(Column{false, big, {}});
  c.columns.push_back(Column{false, id, {}});
  return c;
}

TEST(ChunkBuilder, LargeCopiesSplitAcrossThePoolGiveTheSameBytes) {
  ThreadPool pool(4);
  Chunk a = numbered(700, 1536, 0), b = numbered(500, 1536, 1'000'000'000);  // 4.3 MB and 3 MB
  ChunkBuilder serial(a, 1000), parallel(a, 1000);
  serial.add_rows(a, 100, 700);
  serial.add_rows(b, 0, 400);
  parallel.add_rows(a, 100, 700, &pool);
  parallel.add_rows(b, 0, 400, &pool);
  Chunk s = serial.finish(), p = parallel.finish();
  ASSERT_EQ(p.rows, 1000);
  EXPECT_TRUE(p.columns[0].dense.equals(s.columns[0].dense));
  EXPECT_TRUE(p.columns[1].dense.equals(s.columns[1].dense));
  EXPECT_EQ(p.columns[1].dense.data<int64_t>()[0], 100);
  EXPECT_EQ(p.columns[1].dense.data<int64_t>()[600], 1'000'000'000);
  EXPECT_EQ(p.columns[0].dense.data<float>()[599 * 1536 + 1535], static_cast<float>(699 * 1536 + 1535));
}

TEST(ChunkBuilder, CompatibleComparesColumnsDtypesAndRowShapes) {
  Chunk a = numbered(3, 4, 0);
  ChunkBuilder b(a, 8);
  EXPECT_TRUE(b.compatible(numbered(5, 4, 9)));
  EXPECT_FALSE(b.compatible(numbered(5, 3, 9)));  // another row shape
  Chunk fewer = numbered(3, 4, 0);
  fewer.columns.pop_back();
  EXPECT_FALSE(b.compatible(fewer));
  Chunk ragged = numbered(3, 4, 0);
  ragged.columns[1] = Column{
      true, Tensor(), {Tensor::zeros(DType::I64, {1}), Tensor::zeros(DType::I64, {2}), Tensor::zeros(DType::I64, {3})}};
  EXPECT_FALSE(b.compatible(ragged));
}

TEST(ChunkBuilder, SnapshotCopiesTheRowsSoFarAndLeavesTheBuilderAsItWas) {
  Chunk a = numbered(6, 2, 10);
  ChunkBuilder b(a, 6);
  b.add_rows(a, 1, 4);
  Chunk snap = b.snapshot();
  ASSERT_EQ(snap.rows, 3);
  EXPECT_EQ(snap.columns[1].dense.shape(), (Shape{3}));
  EXPECT_EQ(snap.columns[1].dense.data<int64_t>()[2], 13);
  b.add_rows(a, 4, 6);
  Chunk done = b.finish();
  EXPECT_EQ(done.rows, 5);
  EXPECT_EQ(done.columns[1].dense.data<int64_t>()[4], 15);
  EXPECT_EQ(snap.columns[1].dense.data<int64_t>()[0], 11);  // unaffected by later rows
}

TEST(ChunkBuilder, PerRowByteStringsBecomeOneDenseColumnAgain) {
  Chunk layout;
  layout.columns.push_back(Column{false, Tensor::empty(DType::Bytes, {0}), {}});
  Chunk rows;
  rows.rows = 3;
  rows.columns.push_back(Column{
      true,
      Tensor(),
      {Tensor::from_strings({"a"}, {}), Tensor::from_strings({""}, {}), Tensor::from_strings({"long string"}, {})}});
  ChunkBuilder b(layout, 4);
  b.add_row(rows, 2);
  b.add_row(rows, 0);
  b.add_row(rows, 1);
  Chunk out = b.finish();
  ASSERT_FALSE(out.columns[0].ragged);
  const Tensor& t = out.columns[0].dense;
  EXPECT_EQ(t.shape(), (Shape{3}));
  EXPECT_EQ(t.str(0), "long string");
  EXPECT_EQ(t.str(1), "a");
  EXPECT_EQ(t.str(2), "");
  // And the other way: dense strings into a per-row column.
  ChunkBuilder back(rows, 3);
  back.add_rows(out, 0, 3);
  Chunk per_row = back.finish();
  ASSERT_TRUE(per_row.columns[0].ragged);
  EXPECT_EQ(per_row.columns[0].rows[1].str(0), "a");
}

// A shuffle after batch(3) without drop_remainder sees rows of [3] and, last, a row of [2]: the builder
// must keep each row with its own shape (it once copied the short row with the long row's size).
TEST(ChunkBuilder, RowsOfAnotherShapeTurnTheColumnIntoOneTensorPerRow) {
  Chunk full = numbered(2, 3, 0), part = numbered(1, 2, 100);
  ChunkBuilder b(full, 4);
  b.add_rows(full, 0, 2);
  b.add_rows(part, 0, 1);
  Chunk out = b.finish();
  ASSERT_EQ(out.rows, 3);
  ASSERT_TRUE(out.columns[0].ragged);
  ASSERT_EQ(out.columns[0].rows.size(), 3u);
  EXPECT_EQ(out.columns[0].rows[0].shape(), (Shape{3}));
  EXPECT_EQ(out.columns[0].rows[1].data<float>()[2], 5.0f);
  EXPECT_EQ(out.columns[0].rows[2].shape(), (Shape{2}));
  EXPECT_EQ(out.columns[0].rows[2].data<float>()[1], 101.0f);
  EXPECT_FALSE(out.columns[1].ragged);  // the other column kept one shape and stays dense
  EXPECT_EQ(out.columns[1].dense.data<int64_t>()[2], 100);
  // The next chunk starts dense again.
  b.add_rows(full, 0, 2);
  Chunk again = b.finish();
  EXPECT_FALSE(again.columns[0].ragged);
  EXPECT_EQ(again.columns[0].dense.shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace pipec

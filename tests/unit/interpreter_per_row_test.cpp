// The interpreter keeps the results of per-row ops (crops, flips) one tensor per row and stacks them
// only where a whole-column op or a result needs them. Whatever the chunking, the values must be
// those of evaluating each element on its own, and a result of known shape must come out dense.
#include <gtest/gtest.h>

#include "runtime/ops/interpreter.h"
#include "runtime/ops/tensor_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

using testing::plan_of;

TEST(InterpreterPerRow, ChainsOfPerRowOpsMatchElementByElementAndComeOutDense) {
  Plan plan = plan_of(
      "source s = npy(\"x.npy\") { img: u8[6, 8, 3] }\n"
      "pipeline p = s | map(r => {\n"
      "  patch = random_flip_left_right(random_crop(r.img, 4, 5))\n"
      "  { patch, f: convert_image_dtype(patch, f32) * 2.0, up: flip_up_down(patch) }\n"
      "})\n");
  const ExprFunction* fn = nullptr;
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::Map) fn = s.fn.get();
  ASSERT_NE(fn, nullptr);

  const int64_t rows = 6;
  Tensor x = Tensor::empty(DType::U8, {rows, 6, 8, 3});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + i / 11);
  Chunk all;
  all.rows = rows;
  all.first_index = 40;
  all.epoch = 2;
  all.columns.push_back(Column{false, x, {}});
  EvalContext ec;
  ec.seed = 9;
  std::vector<Column> got = run_function(*fn, {"img"}, all, ec);
  ASSERT_EQ(got.size(), 3u);
  for (const Column& c : got) {
    EXPECT_FALSE(c.ragged);
    EXPECT_EQ(c.dense.shape().at(0), rows);
  }
  for (int64_t r = 0; r < rows; ++r) {
    Chunk one;
    one.rows = 1;
    one.first_index = all.first_index + r;
    one.epoch = all.epoch;
    one.columns.push_back(Column{false, row_of(x, r).reshaped({1, 6, 8, 3}), {}});
    std::vector<Column> want = run_function(*fn, {"img"}, one, ec);
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(row_of(got[k].dense, r).equals(row_of(want[k].dense, 0))) << "row " << r << " result " << k;
  }
  // The draws did vary across rows (otherwise equal rows would prove little).
  bool any_difference = false;
  for (int64_t r = 1; r < rows; ++r)
    any_difference = any_difference || !row_of(got[0].dense, r).equals(row_of(got[0].dense, 0));
  EXPECT_TRUE(any_difference);
}

}  // namespace
}  // namespace pipec

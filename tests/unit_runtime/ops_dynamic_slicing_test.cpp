// Indexing and slicing at run time (dynamic_index, dynamic_slice): negative indices, every integer
// dtype, out-of-range indices (the message names the index, the dimension and, per row, the element),
// Python's clamping of slice bounds, empty slices, steps of either sign and of any size, byte strings,
// and the interpreter's per-row calls.
#include <climits>

#include "ops_test_util.h"
#include "runtime/ops/kernel_error.h"
#include "runtime/ops/slice_bounds.h"

namespace pipec {
namespace {

using namespace ops_test;

Value axis(int64_t a) { return Value::make_int(a); }

// The one-element tensor of `dt` holding v (wrapping, as a cast does).
Tensor scalar(DType dt, int64_t v) {
  Tensor t = Tensor::empty(dt, {});
  const size_t size = dtype_size(dt);
  std::memcpy(t.raw(), &v, size);  // little-endian: the low bytes
  return t;
}

int64_t pick(Tensor x, Tensor i) {
  return ints(call("dynamic_index", {std::move(x), std::move(i)}, DType::I64, {}, {{"axis", axis(0)}}))[0];
}

TEST(OpsDynamicIndex, NegativeIndicesCountFromTheEndInEveryIntegerDtype) {
  const Tensor x = make_i64({4}, {10, 20, 30, 40});
  for (DType dt : {DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32, DType::U64, DType::I64}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    EXPECT_EQ(pick(x, scalar(dt, 0)), 10);
    EXPECT_EQ(pick(x, scalar(dt, 3)), 40);
    if (!is_signed_int(dt)) continue;
    EXPECT_EQ(pick(x, scalar(dt, -1)), 40);
    EXPECT_EQ(pick(x, scalar(dt, -4)), 10);
  }
}

TEST(OpsDynamicIndex, OutOfRangeNamesTheIndexAndTheDimension) {
  const Tensor x = make_i64({4}, {10, 20, 30, 40});
  EXPECT_EQ(error_of([&] { pick(x, scalar(DType::I64, 4)); }), "index 4 is out of range for a dimension of size 4");
  EXPECT_EQ(error_of([&] { pick(x, scalar(DType::I8, -5)); }), "index -5 is out of range for a dimension of size 4");
  EXPECT_EQ(error_of([&] { pick(x, scalar(DType::I64, INT64_MIN)); }),
            "index -9223372036854775808 is out of range for a dimension of size 4");
  // u64 values above i64's range are read as they are, not wrapped to negative ones.
  EXPECT_EQ(error_of([&] { pick(x, scalar(DType::U64, -1)); }),
            "index 18446744073709551615 is out of range for a dimension of size 4");
  EXPECT_EQ(error_of([&] { pick(x, scalar(DType::U8, 255)); }), "index 255 is out of range for a dimension of size 4");
  EXPECT_EQ(error_of([&] { pick(make_i64({0}, {}), scalar(DType::I64, 0)); }),
            "index 0 is out of range for a dimension of size 0");
  EXPECT_EQ(error_of([&] { pick(x, make(DType::F32, {}, {1})); }), "an index must be an integer, not f32");
}

TEST(OpsDynamicIndex, InnerAxesAndByteStrings) {
  const Tensor m = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor col = call("dynamic_index", {m, scalar(DType::I32, -1)}, DType::F32, {2}, {{"axis", axis(1)}});
  EXPECT_EQ(col.shape(), (Shape{2}));
  expect_values(col, {3, 6});
  Tensor row = call("dynamic_index", {m, scalar(DType::I32, 1)}, DType::F32, {3}, {{"axis", axis(-2)}});
  expect_values(row, {4, 5, 6});
  Tensor s = call("dynamic_index", {Tensor::from_strings({"a", "bb", "ccc"}, {3}), scalar(DType::I64, -2)},
                  DType::Bytes, {}, {{"axis", axis(0)}});
  ASSERT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.str(0), "bb");
}

TEST(OpsDynamicIndex, WithRowsEachRowHasItsIndexAndAnErrorNamesTheElement) {
  // lead = 1: x is [rows, 3], the index one value per row.
  const Tensor x = make_i64({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor got = call("dynamic_index", {x, make_i64({3}, {0, -1, 1})}, DType::I64, {}, {{"axis", axis(0)}}, /*lead=*/1);
  EXPECT_EQ(got.shape(), (Shape{3}));
  EXPECT_EQ(ints(got), (std::vector<int64_t>{1, 6, 8}));
  // Through the interpreter: the chunk's rows are elements 100.., the error names element 101.
  FnBuilder b;
  int p = b.param("x", Type::tensor(DType::I64, {3}));
  int i = b.param("i", Type::tensor(DType::I64, {}));
  b.result("y", b.op("dynamic_index", {p, i}, Type::tensor(DType::I64, {}), {{"axis", axis(0)}}));
  Chunk in = chunk(3, {dense(x), dense(make_i64({3}, {2, 3, 0}))}, /*first_index=*/100);
  EvalContext ec;
  const std::string msg = error_of([&] { run_function(b.fn, {"x", "i"}, in, ec); });
  EXPECT_EQ(msg, "test.pipe:1:1: dynamic_index: element 101: index 3 is out of range for a dimension of size 3");
  // Ragged rows go one element at a time; the error still names the element.
  Chunk r = chunk(2, {ragged({make_i64({2}, {1, 2}), make_i64({1}, {7})}), dense(make_i64({2}, {-2, -2}))}, 40);
  FnBuilder rb;
  int rp = rb.param("x", Type::tensor(DType::I64, {kUnknownDim}));
  int ri = rb.param("i", Type::tensor(DType::I64, {}));
  rb.result("y", rb.op("dynamic_index", {rp, ri}, Type::tensor(DType::I64, {}), {{"axis", axis(0)}}));
  EXPECT_EQ(error_of([&] {
              run_function(rb.fn, {"x", "i"}, r, ec);
            }),
            "test.pipe:1:1: dynamic_index: element 41: index -2 is out of range for a dimension of size 1");
}

// x[start:stop:step] of 0..9 with every bound an operand (kSliceNone is not one: a bound that is
// omitted is an attribute).
std::vector<int64_t> slice_operands(int64_t start, int64_t stop, int64_t step) {
  Tensor x = make_i64({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  return ints(call("dynamic_slice", {x, scalar(DType::I64, start), scalar(DType::I64, stop), scalar(DType::I64, step)},
                   DType::I64, {kUnknownDim}, {{"axis", axis(0)}}));
}

using Ints = std::vector<int64_t>;

TEST(OpsDynamicSlice, PythonSemanticsClampingAndEmptySlices) {
  EXPECT_EQ(slice_operands(2, 8, 2), (Ints{2, 4, 6}));
  EXPECT_EQ(slice_operands(-3, 10, 1), (Ints{7, 8, 9}));
  EXPECT_EQ(slice_operands(8, 2, -3), (Ints{8, 5}));
  EXPECT_EQ(slice_operands(-1, -11, -1), (Ints{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice_operands(5, 100, 1), (Ints{5, 6, 7, 8, 9}));
  EXPECT_EQ(slice_operands(-100, 2, 1), (Ints{0, 1}));
  EXPECT_EQ(slice_operands(100, -100, -4), (Ints{9, 5, 1}));
  EXPECT_EQ(slice_operands(3, 3, 1), (Ints{}));
  EXPECT_EQ(slice_operands(7, 2, 1), (Ints{}));
  EXPECT_EQ(slice_operands(2, 7, -1), (Ints{}));
  EXPECT_EQ(slice_operands(100, 200, 1), (Ints{}));
}

TEST(OpsDynamicSlice, ExtremeBoundsAndSteps) {
  // i64's minimum as a run-time bound is a bound, not "omitted": x[-huge::-1] is empty in Python.
  EXPECT_EQ(slice_operands(INT64_MIN, -100, -1), (Ints{}));
  EXPECT_EQ(slice_operands(INT64_MIN, INT64_MAX, 1), (Ints{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // Steps of any size are exact: the length does not overflow.
  EXPECT_EQ(slice_operands(0, 10, INT64_MAX), (Ints{0}));
  EXPECT_EQ(slice_operands(9, -100, INT64_MIN + 1), (Ints{9}));
  EXPECT_EQ(slice_operands(9, -100, INT64_MIN), (Ints{9}));
  EXPECT_EQ(resolve_slice(kSliceNone, kSliceNone, INT64_MAX, 10).len, 1);
  EXPECT_EQ(resolve_slice(kSliceNone, kSliceNone, INT64_MIN + 1, 10).len, 1);
  // A u64 stop above i64's range clamps like the largest i64.
  Tensor x = make_i64({4}, {1, 2, 3, 4});
  Tensor s = call("dynamic_slice", {x, scalar(DType::U64, -1)}, DType::I64, {kUnknownDim},
                  {{"axis", axis(0)}, {"start", Value::make_int(1)}, {"step", Value::make_int(1)}});
  EXPECT_EQ(ints(s), (Ints{2, 3, 4}));
  EXPECT_EQ(error_of([] { slice_operands(0, 5, 0); }), "slice step cannot be zero");
}

TEST(OpsDynamicSlice, AttributesHoldTheConstantBoundsAndOperandsTheOthersInOrder) {
  Tensor x = make_i64({6}, {0, 1, 2, 3, 4, 5});
  const Value none = Value::make_int(kSliceNone);
  // x[n:] (start an operand), x[:n] (stop), x[::n] (step), x[1:n:2] (stop between two constants).
  EXPECT_EQ(ints(call("dynamic_slice", {x, scalar(DType::I32, -2)}, DType::I64, {kUnknownDim},
                      {{"axis", axis(0)}, {"stop", none}, {"step", Value::make_int(1)}})),
            (Ints{4, 5}));
  EXPECT_EQ(ints(call("dynamic_slice", {x, scalar(DType::U8, 2)}, DType::I64, {kUnknownDim},
                      {{"axis", axis(0)}, {"start", none}, {"step", Value::make_int(1)}})),
            (Ints{0, 1}));
  EXPECT_EQ(ints(call("dynamic_slice", {x, scalar(DType::I16, -2)}, DType::I64, {kUnknownDim},
                      {{"axis", axis(0)}, {"start", none}, {"stop", none}})),
            (Ints{5, 3, 1}));
  EXPECT_EQ(ints(call("dynamic_slice", {x, scalar(DType::I64, 100)}, DType::I64, {kUnknownDim},
                      {{"axis", axis(0)}, {"start", Value::make_int(1)}, {"step", Value::make_int(2)}})),
            (Ints{1, 3, 5}));
  // Two operands: start and step.
  EXPECT_EQ(ints(call("dynamic_slice", {x, scalar(DType::I64, 4), scalar(DType::I64, -3)}, DType::I64, {kUnknownDim},
                      {{"axis", axis(0)}, {"stop", none}})),
            (Ints{4, 1}));
  EXPECT_EQ(error_of([&] {
              call("dynamic_slice", {x}, DType::I64, {kUnknownDim}, {{"axis", axis(0)}, {"stop", none}});
            }),
            "no operand for the slice's start");
  EXPECT_EQ(error_of([&] {
              call("dynamic_slice", {x, make_i64({2}, {1, 2})}, DType::I64, {kUnknownDim},
                   {{"axis", axis(0)}, {"stop", none}, {"step", Value::make_int(1)}});
            }),
            "a slice bound must be a scalar, not [2]");
}

TEST(OpsDynamicSlice, InnerAxesAndByteStrings) {
  const Tensor m = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor s = call("dynamic_slice", {m, scalar(DType::I64, -1)}, DType::F32, {2, kUnknownDim},
                  {{"axis", axis(1)}, {"start", Value::make_int(kSliceNone)}, {"stop", Value::make_int(kSliceNone)}});
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  expect_values(s, {3, 2, 1, 6, 5, 4});
  Tensor e = call("dynamic_slice", {m, scalar(DType::I64, 0)}, DType::F32, {2, kUnknownDim},
                  {{"axis", axis(1)}, {"start", Value::make_int(kSliceNone)}, {"step", Value::make_int(1)}});
  EXPECT_EQ(e.shape(), (Shape{2, 0}));
  Tensor b =
      call("dynamic_slice", {Tensor::from_strings({"a", "b", "c", "d"}, {4}), scalar(DType::I64, 2)}, DType::Bytes,
           {kUnknownDim}, {{"axis", axis(0)}, {"start", Value::make_int(1)}, {"step", Value::make_int(1)}});
  ASSERT_EQ(b.num_elements(), 1);
  EXPECT_EQ(b.str(0), "b");
}

TEST(OpsDynamicSlice, TheInterpreterSlicesEachRowByItsOwnBounds) {
  FnBuilder b;
  int x = b.param("x", Type::tensor(DType::I64, {5}));
  int n = b.param("n", Type::tensor(DType::I64, {}));
  b.result("y", b.op("dynamic_slice", {x, n}, Type::tensor(DType::I64, {kUnknownDim}),
                     {{"axis", axis(0)}, {"start", Value::make_int(kSliceNone)}, {"step", Value::make_int(1)}}));
  Chunk in = chunk(
      3,
      {dense(make_i64({3, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})), dense(make_i64({3}, {0, 2, -1}))},
      7);
  EvalContext ec;
  std::vector<Column> out = run_function(b.fn, {"x", "n"}, in, ec);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].ragged);
  ASSERT_EQ(out[0].rows.size(), 3u);
  EXPECT_EQ(ints(out[0].rows[0]), (Ints{}));
  EXPECT_EQ(ints(out[0].rows[1]), (Ints{6, 7}));
  EXPECT_EQ(ints(out[0].rows[2]), (Ints{11, 12, 13, 14}));
  // A zero step at run time names the element.
  FnBuilder z;
  int zx = z.param("x", Type::tensor(DType::I64, {5}));
  int zs = z.param("n", Type::tensor(DType::I64, {}));
  z.result("y",
           z.op("dynamic_slice", {zx, zs}, Type::tensor(DType::I64, {kUnknownDim}),
                {{"axis", axis(0)}, {"start", Value::make_int(kSliceNone)}, {"stop", Value::make_int(kSliceNone)}}));
  Chunk zin = chunk(
      3,
      {dense(make_i64({3, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})), dense(make_i64({3}, {1, -1, 0}))},
      7);
  EXPECT_EQ(error_of([&] {
              run_function(z.fn, {"x", "n"}, zin, ec);
            }),
            "test.pipe:1:1: dynamic_slice: element 9: slice step cannot be zero");
}

}  // namespace
}  // namespace pipec

// Shape kernels: slice (negative and missing bounds, negative steps), gather, reshape, transpose,
// expand_dims/squeeze, stack/concat, on element tensors and on [rows, ...] tensors.
#include <climits>

#include "ops_test_util.h"

namespace pipec {
namespace {

using namespace ops_test;
constexpr int64_t kNone = INT64_MIN;

std::map<std::string, Value> slice_attrs(std::vector<int64_t> starts, std::vector<int64_t> stops,
                                         std::vector<int64_t> steps) {
  return {{"starts", ints_value(starts)}, {"stops", ints_value(stops)}, {"steps", ints_value(steps)}};
}

std::vector<int64_t> slice1(int64_t start, int64_t stop, int64_t step) {
  Tensor x = make(DType::I32, {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  return ints(call("slice", {x}, DType::I32, {-1}, slice_attrs({start}, {stop}, {step})));
}

TEST(OpsShape, SlicePythonSemantics) {
  EXPECT_EQ(slice1(2, 8, 2), (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(slice1(-3, kNone, 1), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(slice1(kNone, kNone, -1), (std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice1(8, 2, -3), (std::vector<int64_t>{8, 5}));
  EXPECT_EQ(slice1(-1, -11, -1), (std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice1(kNone, -8, -2), (std::vector<int64_t>{9, 7, 5, 3}));
  EXPECT_EQ(slice1(5, 100, 1), (std::vector<int64_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(slice1(100, kNone, 1), (std::vector<int64_t>{}));
  EXPECT_EQ(slice1(-100, 2, 1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(slice1(100, kNone, -4), (std::vector<int64_t>{9, 5, 1}));
  EXPECT_EQ(slice1(3, 3, 1), (std::vector<int64_t>{}));
  EXPECT_THROW(slice1(0, 5, 0), OpError);
}

TEST(OpsShape, Slice2DAndWithRows) {
  Tensor x = make(DType::F32, {3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  Tensor s = call("slice", {x}, DType::F32, {2, 2}, slice_attrs({1, kNone}, {kNone, kNone}, {1, -2}));
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  expect_values(s, {13, 11, 23, 21});
  // lead = 1: the attributes address element dims only; the rows dim is kept whole.
  Tensor r = call("slice", {x}, DType::F32, {2}, slice_attrs({1}, {3}, {1}), /*lead=*/1);
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  expect_values(r, {1, 2, 11, 12, 21, 22});
  // bytes slice
  Tensor b = call("slice", {Tensor::from_strings({"a", "b", "c", "d"}, {4})}, DType::Bytes, {2},
                  slice_attrs({kNone}, {kNone}, {-2}));
  ASSERT_EQ(b.num_elements(), 2);
  EXPECT_EQ(b.str(0), "d");
  EXPECT_EQ(b.str(1), "b");
}

TEST(OpsShape, Gather) {
  Tensor x = make(DType::I16, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor g =
      call("gather", {x}, DType::I16, {2, 4}, {{"axis", Value::make_int(1)}, {"indices", ints_value({2, 0, -1, 1})}});
  EXPECT_EQ(g.shape(), (Shape{2, 4}));
  EXPECT_EQ(ints(g), (std::vector<int64_t>{3, 1, 3, 2, 6, 4, 6, 5}));
  Tensor g0 =
      call("gather", {x}, DType::I16, {3, 3}, {{"axis", Value::make_int(0)}, {"indices", ints_value({1, 1, 0})}});
  EXPECT_EQ(ints(g0), (std::vector<int64_t>{4, 5, 6, 4, 5, 6, 1, 2, 3}));
  // with rows: axis 0 of the element is dim 1
  Tensor gr = call("gather", {x}, DType::I16, {1}, {{"axis", Value::make_int(0)}, {"indices", ints_value({2})}}, 1);
  EXPECT_EQ(ints(gr), (std::vector<int64_t>{3, 6}));
  try {
    call("gather", {x}, DType::I16, {1}, {{"axis", Value::make_int(1)}, {"indices", ints_value({3})}});
    FAIL() << "expected an error";
  } catch (const OpError& e) {
    EXPECT_STREQ(e.what(), "index 3 is out of range for axis 1 of size 3");
  }
  Tensor gb = call("gather", {Tensor::from_strings({"x", "yy", "zzz"}, {3})}, DType::Bytes, {2},
                   {{"axis", Value::make_int(0)}, {"indices", ints_value({2, 0})}});
  EXPECT_EQ(gb.str(0), "zzz");
  EXPECT_EQ(gb.str(1), "x");
}

TEST(OpsShape, Reshape) {
  Tensor x = make(DType::U8, {2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor r = call("reshape", {x}, DType::U8, {3, 4}, {{"shape", ints_value({3, -1})}});
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_EQ(r.data<uint8_t>(), x.data<uint8_t>());  // no copy
  Tensor rows = call("reshape", {x}, DType::U8, {2, 3}, {{"shape", ints_value({2, 3})}}, 1);
  EXPECT_EQ(rows.shape(), (Shape{2, 2, 3}));
  Tensor scalar = call("reshape", {make(DType::F32, {1, 1}, {5})}, DType::F32, {}, {{"shape", ints_value({})}});
  EXPECT_EQ(scalar.shape(), Shape{});
  // several unknown dims: matched against the element's dims, unit dims dropped or added
  Tensor u = call("reshape", {make(DType::F32, {1, 2, 3}, {1, 2, 3, 4, 5, 6})}, DType::F32, {-1, -1, 1},
                  {{"shape", ints_value({-1, -1, 1})}});
  EXPECT_EQ(u.shape(), (Shape{2, 3, 1}));
  try {
    call("reshape", {x}, DType::U8, {5, 2}, {{"shape", ints_value({5, 2})}});
    FAIL() << "expected an error";
  } catch (const OpError& e) {
    EXPECT_STREQ(e.what(), "cannot reshape [2, 6] (12 elements) to [5, 2]");
  }
  EXPECT_THROW(call("reshape", {x}, DType::U8, {5, -1}, {{"shape", ints_value({5, -1})}}), OpError);
}

TEST(OpsShape, TransposeExpandSqueeze) {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i) v.push_back(i);
  Tensor x = make(DType::I32, {2, 3, 4}, v);
  Tensor t = call("transpose", {x}, DType::I32, {4, 2, 3}, {{"perm", ints_value({2, 0, 1})}});
  EXPECT_EQ(t.shape(), (Shape{4, 2, 3}));
  // t[k][i][j] = x[i][j][k] = 12 i + 4 j + k
  std::vector<int64_t> got = ints(t);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[k * 6 + i * 3 + j], 12 * i + 4 * j + k);
  // with rows: perm addresses the element dims [3, 4] of a [2, 3, 4] tensor
  Tensor tr = call("transpose", {x}, DType::I32, {4, 3}, {{"perm", ints_value({1, 0})}}, 1);
  EXPECT_EQ(tr.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(ints(tr)[1], 4);
  Tensor e = call("expand_dims", {x}, DType::I32, {2, 3, 4, 1}, {{"axis", Value::make_int(-1)}});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4, 1}));
  Tensor e1 = call("expand_dims", {x}, DType::I32, {1, 3, 4}, {{"axis", Value::make_int(0)}}, 1);
  EXPECT_EQ(e1.shape(), (Shape{2, 1, 3, 4}));
  Tensor y = make(DType::F32, {1, 3, 1}, {1, 2, 3});
  EXPECT_EQ(call("squeeze", {y}, DType::F32, {3}).shape(), (Shape{3}));
  EXPECT_EQ(call("squeeze", {y}, DType::F32, {3, 1}, {{"axis", Value::make_int(0)}}).shape(), (Shape{3, 1}));
  EXPECT_THROW(call("squeeze", {y}, DType::F32, {1, 1}, {{"axis", Value::make_int(1)}}), OpError);
  // a dim unknown to the type stays even when it is 1 at run time
  EXPECT_EQ(call("squeeze", {make(DType::F32, {1, 1}, {7})}, DType::F32, {-1}).shape(), (Shape{1}));
}

TEST(OpsShape, StackAndConcat) {
  Tensor a = make(DType::F32, {2}, {1, 2});
  Tensor b = make(DType::F32, {2}, {3, 4});
  Tensor s0 = call("stack", {a, b}, DType::F32, {2, 2}, {{"axis", Value::make_int(0)}});
  expect_values(s0, {1, 2, 3, 4});
  Tensor s1 = call("stack", {a, b}, DType::F32, {2, 2}, {{"axis", Value::make_int(-1)}});
  expect_values(s1, {1, 3, 2, 4});
  Tensor scalars =
      call("stack", {make(DType::I64, {}, {7}), make(DType::I64, {}, {8}), make(DType::I64, {}, {9})}, DType::I64, {3});
  EXPECT_EQ(ints(scalars), (std::vector<int64_t>{7, 8, 9}));
  // mixed dtypes are converted to the result's
  Tensor mixed = call("stack", {make(DType::I32, {}, {1}), make(DType::F64, {}, {2.5})}, DType::F64, {2});
  expect_values(mixed, {1, 2.5});
  Tensor m = make(DType::U8, {2, 2}, {1, 2, 3, 4});
  Tensor n = make(DType::U8, {2, 1}, {9, 8});
  Tensor c = call("concat", {m, n}, DType::U8, {2, 3});
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(ints(c), (std::vector<int64_t>{1, 2, 9, 3, 4, 8}));
  Tensor c0 = call("concat", {m, make(DType::U8, {1, 2}, {5, 6})}, DType::U8, {3, 2}, {{"axis", Value::make_int(0)}});
  EXPECT_EQ(ints(c0), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  // rows: [2 rows, 2] ++ [2 rows, 1] along the element's axis 0
  Tensor cr = call("concat", {m, n}, DType::U8, {3}, {}, 1);
  EXPECT_EQ(ints(cr), (std::vector<int64_t>{1, 2, 9, 3, 4, 8}));
  Tensor sr = call("stack", {m, m}, DType::U8, {2, 2}, {{"axis", Value::make_int(1)}}, 1);
  EXPECT_EQ(sr.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(ints(sr), (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_THROW(call("concat", {m, make(DType::U8, {3, 1}, {1, 2, 3})}, DType::U8, {2, 3}), OpError);
  Tensor cb =
      call("concat", {Tensor::from_strings({"a"}, {1}), Tensor::from_strings({"b", "c"}, {2})}, DType::Bytes, {3});
  EXPECT_EQ(cb.str(0), "a");
  EXPECT_EQ(cb.str(2), "c");
}

}  // namespace
}  // namespace pipec

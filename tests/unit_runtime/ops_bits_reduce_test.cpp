// unpack_bits / pack_bits, one_hot, reductions over axes, size.
#include <cmath>
#include <limits>

#include "ops_test_util.h"

namespace pipec {
namespace {

using namespace ops_test;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(OpsBits, UnpackIsMostSignificantBitFirst) {
  Tensor x = make(DType::U8, {2}, {0xB0, 0x01});
  Tensor b = call("unpack_bits", {x}, DType::U8, {16});
  EXPECT_EQ(b.shape(), (Shape{16}));
  EXPECT_EQ(ints(b), (std::vector<int64_t>{1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  Tensor rows = call("unpack_bits", {make(DType::U8, {2, 1}, {0x80, 0x7F})}, DType::U8, {8}, {}, 1);
  EXPECT_EQ(rows.shape(), (Shape{2, 8}));
  EXPECT_EQ(ints(rows), (std::vector<int64_t>{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_THROW(call("unpack_bits", {make(DType::I8, {1}, {1})}, DType::U8, {8}), OpError);
}

TEST(OpsBits, PackUnpackRoundTrip) {
  std::vector<double> bytes;
  uint32_t s = 12345;
  for (int i = 0; i < 3 * 25; ++i) {
    s = s * 1103515245u + 12345u;
    bytes.push_back((s >> 16) & 0xFF);
  }
  Tensor x = make(DType::U8, {3, 25}, bytes);
  Tensor bits = call("unpack_bits", {x}, DType::U8, {3, 200});
  Tensor back = call("pack_bits", {bits}, DType::U8, {3, 25});
  EXPECT_EQ(back.shape(), (Shape{3, 25}));
  EXPECT_TRUE(back.equals(x));
  // nonzero counts as 1, in any dtype
  Tensor f = make(DType::F32, {8}, {2, 0, 0, 0, 0, 0, 0, -0.5});
  EXPECT_EQ(ints(call("pack_bits", {f}, DType::U8, {1})), (std::vector<int64_t>{0x81}));
  EXPECT_THROW(call("pack_bits", {make(DType::U8, {7}, {1, 1, 1, 1, 1, 1, 1})}, DType::U8, {1}), OpError);
}

TEST(OpsBits, OneHot) {
  Tensor idx = make(DType::I32, {4}, {0, 2, -1, 3});
  Tensor o = call("one_hot", {idx}, DType::F32, {4, 3}, {{"depth", Value::make_int(3)}});
  EXPECT_EQ(o.shape(), (Shape{4, 3}));
  expect_values(o, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  Tensor u = call("one_hot", {make(DType::U8, {2, 1}, {1, 0})}, DType::U8, {1, 2}, {{"depth", Value::make_int(2)}});
  EXPECT_EQ(u.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(ints(u), (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(OpsReduce, SumMeanProdOverAxes) {
  Tensor x = make(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(ints(call("sum", {x}, DType::I32)), (std::vector<int64_t>{21}));
  EXPECT_EQ(ints(call("sum", {x}, DType::I32, {3}, {{"axis", Value::make_int(0)}})), (std::vector<int64_t>{5, 7, 9}));
  EXPECT_EQ(ints(call("sum", {x}, DType::I32, {2}, {{"axis", Value::make_int(-1)}})), (std::vector<int64_t>{6, 15}));
  EXPECT_EQ(ints(call("prod", {x}, DType::I32, {2}, {{"axis", Value::make_int(1)}})), (std::vector<int64_t>{6, 120}));
  Tensor m = call("mean", {x}, DType::F32, {3}, {{"axis", Value::make_int(0)}});
  EXPECT_EQ(m.dtype(), DType::F32);
  expect_values(m, {2.5, 3.5, 4.5});
  expect_values(call("mean", {x}, DType::F32), {3.5});
  // integer sums wrap in the result dtype
  EXPECT_EQ(ints(call("sum", {make(DType::U8, {3}, {200, 100, 1})}, DType::U8)), (std::vector<int64_t>{45}));
  // bool sums count
  EXPECT_EQ(ints(call("sum", {make(DType::Bool, {4}, {1, 0, 1, 1})}, DType::I64)), (std::vector<int64_t>{3}));
  // floats accumulate in f64: 1e8 + 1 + ... stays exact before the final rounding
  expect_values(call("sum", {make(DType::F32, {3}, {1e8, 1, -1e8})}, DType::F32), {1});
  expect_values(call("sum", {make(DType::BF16, {2}, {1.5, 2})}, DType::BF16), {3.5});
  // non-adjacent axes [0, 2] of [2, 3, 2]
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back(i);
  Tensor y = make(DType::F64, {2, 3, 2}, v);
  Tensor s02 = call("sum", {y}, DType::F64, {3}, {{"axis", ints_value({0, 2})}});
  expect_values(s02, {0 + 1 + 6 + 7, 2 + 3 + 8 + 9, 4 + 5 + 10 + 11});
  // with rows: no axis means all element axes, each row on its own
  Tensor r = call("sum", {x}, DType::I32, {}, {}, 1);
  EXPECT_EQ(r.shape(), (Shape{2}));
  EXPECT_EQ(ints(r), (std::vector<int64_t>{6, 15}));
  Tensor r0 = call("sum", {x}, DType::I32, {}, {{"axis", Value::make_int(0)}}, 1);
  EXPECT_EQ(ints(r0), (std::vector<int64_t>{6, 15}));
  expect_values(call("mean", {make(DType::F32, {0}, {})}, DType::F32), {kNaN});
}

TEST(OpsReduce, MaxMinArgmax) {
  Tensor x = make(DType::F32, {2, 3}, {1, 5, 5, -1, kNaN, 2});
  expect_values(call("reduce_max", {x}, DType::F32, {2}, {{"axis", Value::make_int(1)}}), {5, kNaN});
  expect_values(call("reduce_min", {x}, DType::F32, {3}, {{"axis", Value::make_int(0)}}), {-1, kNaN, 2});
  EXPECT_EQ(ints(call("argmax", {x}, DType::I64, {2})), (std::vector<int64_t>{1, 1}));  // first max, first NaN
  EXPECT_EQ(ints(call("argmax", {x}, DType::I64, {3}, {{"axis", Value::make_int(0)}})),
            (std::vector<int64_t>{0, 1, 0}));
  Tensor i = make(DType::I8, {4}, {-5, 7, 7, -128});
  EXPECT_EQ(ints(call("reduce_max", {i}, DType::I8)), (std::vector<int64_t>{7}));
  EXPECT_EQ(ints(call("reduce_min", {i}, DType::I8)), (std::vector<int64_t>{-128}));
  EXPECT_EQ(ints(call("argmax", {i}, DType::I64)), (std::vector<int64_t>{1}));
  expect_values(call("reduce_max", {make(DType::F32, {0}, {})}, DType::F32), {-kInf});
  EXPECT_EQ(ints(call("reduce_min", {make(DType::U16, {0}, {})}, DType::U16)), (std::vector<int64_t>{65535}));
  EXPECT_THROW(call("argmax", {make(DType::F32, {0}, {})}, DType::I64), OpError);
  EXPECT_EQ(ints(call("reduce_max", {make(DType::Bool, {3}, {0, 1, 0})}, DType::Bool)), (std::vector<int64_t>{1}));
}

TEST(OpsReduce, Size) {
  EXPECT_EQ(ints(call("size", {make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}, DType::I64)), (std::vector<int64_t>{6}));
  Tensor rows = call("size", {make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}, DType::I64, {}, {}, 1);
  EXPECT_EQ(ints(rows), (std::vector<int64_t>{3, 3}));
  Tensor s = call("size", {Tensor::from_strings({"abc", "", "hello"}, {3})}, DType::I64, {}, {}, 1);
  EXPECT_EQ(ints(s), (std::vector<int64_t>{3, 0, 5}));
}

}  // namespace
}  // namespace pipec

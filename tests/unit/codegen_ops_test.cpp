// JIT kernels against the interpreter, op by op: every supported element-wise op on every dtype it is
// defined for, casts between all numeric dtypes, broadcasting, and the structural ops, on random
// inputs mixed with edge values (NaN, +-inf, -0.0, integer min/max, zero divisors, big shift counts).
// Results must be bit-identical (NaN payloads aside).
#include <gtest/gtest.h>

#include "tests/unit/codegen_util.h"

namespace pipec {
namespace {

using testing::expect_jit_matches;
using testing::FnBuilder;
using testing::int_list;

const std::vector<DType> kInts = {DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32, DType::U64, DType::I64};
const std::vector<DType> kFloats = {DType::F32, DType::F64};

std::vector<DType> all_numeric() {
  std::vector<DType> v = kInts;
  v.insert(v.end(), kFloats.begin(), kFloats.end());
  return v;
}

class BinaryOps : public ::testing::TestWithParam<DType> {};

TEST_P(BinaryOps, MatchInterpreterWithBroadcasting) {
  const DType dt = GetParam();
  FnBuilder b;
  int x = b.param("x", dt, {3, 4});
  int y = b.param("y", dt, {4});  // broadcasts over x's rows
  std::vector<std::string> ops = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "max", "min"};
  if (is_float(dt)) ops.push_back("atan2");
  else ops.insert(ops.end(), {"bit_and", "bit_or", "bit_xor", "shl", "shr"});
  for (const std::string& op : ops) b.result(op, b.op(op, {x, y}, dt, {3, 4}));
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge"}) b.result(cmp, b.op(cmp, {y, x}, DType::Bool, {3, 4}));
  b.result("clip", b.op("clip", {x, y, b.param("z", dt, {3, 1})}, dt, {3, 4}));
  expect_jit_matches(b, 41, 7);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, BinaryOps, ::testing::ValuesIn(all_numeric()),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

class UnaryOps : public ::testing::TestWithParam<DType> {};

TEST_P(UnaryOps, MatchInterpreter) {
  const DType dt = GetParam();
  FnBuilder b;
  int x = b.param("x", dt, {5});
  std::vector<std::string> ops = {"neg", "abs", "sign", "relu", "square"};
  if (is_float(dt))
    ops.insert(ops.end(), {"tanh", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "round", "sigmoid"});
  else
    ops.push_back("bit_not");
  for (const std::string& op : ops) b.result(op, b.op(op, {x}, dt, {5}));
  expect_jit_matches(b, 53, 11);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, UnaryOps, ::testing::ValuesIn(all_numeric()),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(CodegenOps, CastsBetweenAllNumericDtypes) {
  std::vector<DType> dts = all_numeric();
  dts.push_back(DType::Bool);
  FnBuilder b;
  for (DType from : dts) {
    int x = b.param(std::string("x_") + std::string(dtype_name(from)), from, {6});
    for (DType to : dts)
      if (to != from) b.result(fmt::format("{}_to_{}", dtype_name(from), dtype_name(to)), b.op("cast", {x}, to, {6}));
  }
  expect_jit_matches(b, 67, 3);
}

TEST(CodegenOps, BoolLogicWhereAndBitOps) {
  FnBuilder b;
  int p = b.param("p", DType::Bool, {4});
  int q = b.param("q", DType::Bool, {4});
  int x = b.param("x", DType::F32, {4});
  int y = b.param("y", DType::F32, {});
  b.result("and", b.op("and", {p, q}, DType::Bool, {4}));
  b.result("or", b.op("or", {p, q}, DType::Bool, {4}));
  b.result("not", b.op("not", {p}, DType::Bool, {4}));
  b.result("xor", b.op("bit_xor", {p, q}, DType::Bool, {4}));
  b.result("bnot", b.op("bit_not", {p}, DType::Bool, {4}));
  b.result("eq", b.op("eq", {p, q}, DType::Bool, {4}));
  b.result("lt", b.op("lt", {p, q}, DType::Bool, {4}));
  b.result("where", b.op("where", {p, x, y}, DType::F32, {4}));
  expect_jit_matches(b, 29, 5);
}

TEST(CodegenOps, BroadcastingShapesAndConstants) {
  FnBuilder b;
  int col = b.param("col", DType::I32, {3, 1});
  int row = b.param("row", DType::I32, {1, 4});
  int s = b.param("s", DType::I32, {});
  int table = b.constant(int_list({10, -20, 30, -40}), DType::I32, {4});
  int k = b.constant(Value::make_int(3, DType::I32), DType::I32, {});
  b.result("outer", b.op("mul", {col, row}, DType::I32, {3, 4}));
  b.result("scalar", b.op("add", {s, col}, DType::I32, {3, 1}));
  b.result("table", b.op("sub", {col, table}, DType::I32, {3, 4}));
  b.result("const", b.op("shl", {row, k}, DType::I32, {1, 4}));
  b.result("folded", b.op("mul", {table, k}, DType::I32, {4}));  // row-invariant: folded at compile time
  expect_jit_matches(b, 17, 9);
}

TEST(CodegenOps, StructuralOps) {
  FnBuilder b;
  int x = b.param("x", DType::F32, {4, 6});
  int bytes = b.param("bytes", DType::U8, {3});
  int idx = b.param("idx", DType::I64, {5});
  auto attrs = [](std::initializer_list<std::pair<const std::string, Value>> l) { return std::map<std::string, Value>(l); };
  b.result("slice", b.op("slice", {x}, DType::F32, {2, 3},
                         attrs({{"starts", int_list({1, -1})}, {"stops", int_list({3, 0})}, {"steps", int_list({1, -2})}})));
  b.result("gather", b.op("gather", {x}, DType::F32, {4, 3}, attrs({{"axis", Value::make_int(1)}, {"indices", int_list({5, 0, -3})}})));
  b.result("gather_affine", b.op("gather", {x}, DType::F32, {2, 6}, attrs({{"axis", Value::make_int(0)}, {"indices", int_list({1, 3})}})));
  b.result("reshape", b.op("reshape", {x}, DType::F32, {3, 8}, attrs({{"shape", int_list({3, 8})}})));
  int e = b.op("expand_dims", {x}, DType::F32, {4, 1, 6}, attrs({{"axis", Value::make_int(1)}}));
  b.result("expand_dims", e);
  b.result("squeeze", b.op("squeeze", {e}, DType::F32, {4, 6}, attrs({{"axis", Value::make_int(1)}})));
  b.result("transpose", b.op("transpose", {x}, DType::F32, {6, 4}, attrs({{"perm", int_list({1, 0})}})));
  b.result("concat", b.op("concat", {x, x}, DType::F32, {4, 12}, attrs({{"axis", Value::make_int(1)}})));
  b.result("stack", b.op("stack", {x, x, x}, DType::F32, {4, 3, 6}, attrs({{"axis", Value::make_int(1)}})));
  int bits = b.op("unpack_bits", {bytes}, DType::U8, {24});
  b.result("unpack_bits", bits);
  b.result("pack_bits", b.op("pack_bits", {bits}, DType::U8, {3}));
  b.result("one_hot", b.op("one_hot", {idx}, DType::F32, {5, 7}, attrs({{"depth", Value::make_int(7)}})));
  expect_jit_matches(b, 23, 13);
}

class Reductions : public ::testing::TestWithParam<DType> {};

TEST_P(Reductions, FoldInTheInterpretersOrder) {
  const DType dt = GetParam();
  FnBuilder b;
  int x = b.param("x", dt, {3, 4, 5});
  const DType sum_t = dt == DType::Bool ? DType::I64 : dt;
  auto axis = [](std::vector<int64_t> v) { return std::map<std::string, Value>{{"axis", int_list(v)}}; };
  b.result("sum_all", b.op("sum", {x}, sum_t, {}));
  b.result("sum_1", b.op("sum", {x}, sum_t, {3, 5}, axis({1})));
  b.result("sum_02", b.op("sum", {x}, sum_t, {4}, axis({0, -1})));  // not contiguous
  b.result("prod_2", b.op("prod", {x}, sum_t, {3, 4}, axis({2})));
  b.result("mean_0", b.op("mean", {x}, is_float(dt) ? dt : DType::F32, {4, 5}, axis({0})));
  b.result("max_1", b.op("reduce_max", {x}, dt, {3, 5}, axis({1})));
  b.result("min_all", b.op("reduce_min", {x}, dt, {}));
  expect_jit_matches(b, 19, 23);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, Reductions,
                         ::testing::Values(DType::Bool, DType::U8, DType::I16, DType::U32, DType::I64, DType::U64, DType::F32, DType::F64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(CodegenOps, RandomOpsDrawTheInterpretersStreams) {
  FnBuilder b;
  int lo = b.param("lo", DType::F32, {});
  int hi = b.param("hi", DType::F64, {3});
  auto attrs = [](int64_t op_id, std::vector<int64_t> shape, bool seeded) {
    std::map<std::string, Value> a{{"op_id", Value::make_int(op_id)}, {"shape", int_list(shape)}};
    if (seeded) a["seed"] = Value::make_int(1234);
    return a;
  };
  b.result("uniform", b.op("random_uniform", {}, DType::F32, {2, 3}, attrs(1, {2, 3}, false)));
  b.result("uniform_lohi", b.op("random_uniform", {lo, hi}, DType::F32, {3}, attrs(2, {3}, true)));
  b.result("uniform_f64", b.op("random_uniform", {}, DType::F64, {4}, attrs(3, {4}, false)));
  b.result("normal", b.op("random_normal", {}, DType::F32, {5}, attrs(4, {5}, false)));  // odd: a spare normal
  b.result("normal_ms", b.op("random_normal", {hi, hi}, DType::F64, {3}, attrs(5, {3}, true)));
  int l = b.constant(Value::make_int(-5), DType::I64, {});
  int h = b.constant(Value::make_int(1000), DType::I64, {});
  b.result("int", b.op("random_int", {l, h}, DType::I32, {7}, attrs(6, {7}, false)));
  expect_jit_matches(b, 31, 17);
}

}  // namespace
}  // namespace pipec

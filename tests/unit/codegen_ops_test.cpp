// JIT kernels against the interpreter, op by op: every supported element-wise op on every dtype it is
// defined for, casts between all numeric dtypes, broadcasting, and the structural ops, on random
// inputs mixed with edge values (NaN, +-inf, -0.0, integer min/max, zero divisors, big shift counts).
// Results must be bit-identical (NaN payloads aside).
#include <gtest/gtest.h>

#include <set>

#include "compiler/codegen/loop_nest.h"

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

class Casts : public ::testing::TestWithParam<DType> {};

TEST_P(Casts, FromOneDtypeToEveryOther) {
  std::vector<DType> dts = all_numeric();
  dts.push_back(DType::Bool);
  const DType from = GetParam();
  FnBuilder b;
  int x = b.param("x", from, {6});
  for (DType to : dts)
    if (to != from) b.result(fmt::format("{}_to_{}", dtype_name(from), dtype_name(to)), b.op("cast", {x}, to, {6}));
  expect_jit_matches(b, 67, 3);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, Casts,
                         ::testing::Values(DType::Bool, DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32,
                                           DType::U64, DType::I64, DType::F32, DType::F64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

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

// unpack_bits followed by reshapes, gathers and slices: the loop-nest lowering splits bit offsets
// along multiples of 8, folds index tables, and reads the bits of a whole inner loop from one word
// (see unpack_bits_from_word in compiler/codegen/loop_nest.cpp). Each case below takes a different
// branch: 3-byte (u32) and 8-byte (u64) words from a gather table, a plain loop index, offsets that are
// not byte aligned, a reversed slice (no proof of non-negativity), and a gather not covering its axis.
TEST(CodegenOps, UnpackBitsThroughIndexRewrites) {
  FnBuilder b;
  auto attrs = [](std::initializer_list<std::pair<const std::string, Value>> l) { return std::map<std::string, Value>(l); };
  int bytes = b.param("bytes", DType::U8, {24});
  int bits = b.op("unpack_bits", {bytes}, DType::U8, {192});
  int sq = b.op("reshape", {bits}, DType::U8, {8, 24}, attrs({{"shape", int_list({8, 24})}}));
  b.result("planes_u32", b.op("gather", {sq}, DType::U8, {8, 24}, attrs({{"axis", Value::make_int(1)},
      {"indices", int_list({0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23})}})));
  int wide = b.op("reshape", {bits}, DType::U8, {3, 64}, attrs({{"shape", int_list({3, 64})}}));
  std::vector<int64_t> rev64;
  for (int64_t i = 63; i >= 0; --i) rev64.push_back(i % 2 ? i : 63 - i);
  b.result("planes_u64", b.op("gather", {wide}, DType::U8, {3, 64}, attrs({{"axis", Value::make_int(1)}, {"indices", int_list(rev64)}})));
  b.result("partial_gather", b.op("gather", {wide}, DType::U8, {3, 2}, attrs({{"axis", Value::make_int(1)}, {"indices", int_list({9, 2})}})));
  b.result("aligned_slice", b.op("slice", {bits}, DType::U8, {16},
                                 attrs({{"starts", int_list({8})}, {"stops", int_list({24})}, {"steps", int_list({1})}})));
  b.result("unaligned_slice", b.op("slice", {bits}, DType::U8, {16},
                                   attrs({{"starts", int_list({3})}, {"stops", int_list({19})}, {"steps", int_list({1})}})));
  b.result("reversed", b.op("slice", {bits}, DType::U8, {192},
                            attrs({{"starts", int_list({-1})}, {"stops", int_list({-193})}, {"steps", int_list({-1})}})));
  b.result("as_f32", b.op("cast", {b.op("reshape", {bits}, DType::U8, {2, 96}, attrs({{"shape", int_list({2, 96})}}))},
                          DType::F32, {2, 96}));
  expect_jit_matches(b, 29, 17);
}

// The chess board loop of seed 002 after lowering: no division or remainder is left in the index
// arithmetic (the bit address of every element is a square's 3-byte word and a per-plane shift).
TEST(CodegenOps, ChessBoardLoopHasNoDivisions) {
  FnBuilder b;
  auto attrs = [](std::initializer_list<std::pair<const std::string, Value>> l) { return std::map<std::string, Value>(l); };
  int d = b.param("d", DType::U8, {194});
  int bits = b.op("unpack_bits", {d}, DType::U8, {1552});
  int board = b.op("slice", {bits}, DType::U8, {1536}, attrs({{"starts", int_list({0})}, {"stops", int_list({1536})}, {"steps", int_list({1})}}));
  board = b.op("reshape", {board}, DType::U8, {8, 8, 24}, attrs({{"shape", int_list({8, 8, 24})}}));
  board = b.op("gather", {board}, DType::U8, {8, 8, 24}, attrs({{"axis", Value::make_int(2)},
      {"indices", int_list({0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23})}}));
  b.result("board", b.op("cast", {board}, DType::F32, {8, 8, 24}));
  codegen::LoopNest nest;
  std::string why;
  ASSERT_TRUE(codegen::lower_to_loop_nest(b.fn, {"d"}, nest, why)) << why;
  const codegen::LoopOutput& out = nest.outputs.at(0);
  // Walk what the root reaches (dead nodes of abandoned rewrites may remain in the list).
  std::vector<int> todo{out.root};
  std::set<int> seen;
  int loads = 0;
  while (!todo.empty()) {
    int id = todo.back();
    todo.pop_back();
    if (!seen.insert(id).second) continue;
    const codegen::Node& n = out.nodes.at(static_cast<size_t>(id));
    if (n.kind == codegen::NodeKind::Index) {
      EXPECT_TRUE(n.index_op != codegen::IndexOp::Div && n.index_op != codegen::IndexOp::Mod) << "n" << id << " idx." << codegen::index_op_name(n.index_op);
    }
    if (n.kind == codegen::NodeKind::Load) ++loads;
    for (int a : n.args) todo.push_back(a);
  }
  EXPECT_EQ(loads, 3);  // the square's three bytes
  expect_jit_matches(b, 19, 23);
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

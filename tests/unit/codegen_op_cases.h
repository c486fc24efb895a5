// The op-by-op cases of the code generators: expression functions that together use every op the loop
// nests (compiler/codegen/loop_nest.h) support, on every dtype it is defined for. The LLVM JIT
// (codegen_ops_test.cpp) and the CUDA printer (cuda_ops_test.cpp) run the same cases against the
// interpreter, so a new op added here is checked on both back ends.
#pragma once

#include <string>
#include <vector>

#include "tests/unit/codegen_util.h"

namespace pipec::testing {

inline const std::vector<DType>& int_dtypes() {
  static const std::vector<DType> v = {DType::U8,  DType::I8,  DType::U16, DType::I16,
                                       DType::U32, DType::I32, DType::U64, DType::I64};
  return v;
}
inline std::vector<DType> numeric_dtypes() {
  std::vector<DType> v = int_dtypes();
  v.push_back(DType::F32);
  v.push_back(DType::F64);
  return v;
}
inline std::vector<DType> cast_dtypes() {
  std::vector<DType> v = numeric_dtypes();
  v.insert(v.begin(), DType::Bool);
  return v;
}
inline std::vector<DType> reduction_dtypes() {
  return {DType::Bool, DType::U8, DType::I16, DType::U32, DType::I64, DType::U64, DType::F32, DType::F64};
}

using Attrs = std::map<std::string, Value>;

/// Every binary op defined for `dt`, broadcasting a row against a matrix; comparisons; clip.
inline FnBuilder binary_ops_case(DType dt) {
  FnBuilder b;
  int x = b.param("x", dt, {3, 4});
  int y = b.param("y", dt, {4});  // broadcasts over x's rows
  std::vector<std::string> ops = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "max", "min"};
  if (is_float(dt)) ops.push_back("atan2");
  else ops.insert(ops.end(), {"bit_and", "bit_or", "bit_xor", "shl", "shr"});
  for (const std::string& op : ops) b.result(op, b.op(op, {x, y}, dt, {3, 4}));
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge"}) b.result(cmp, b.op(cmp, {y, x}, DType::Bool, {3, 4}));
  b.result("clip", b.op("clip", {x, y, b.param("z", dt, {3, 1})}, dt, {3, 4}));
  return b;
}

/// Every unary op defined for `dt`.
inline FnBuilder unary_ops_case(DType dt) {
  FnBuilder b;
  int x = b.param("x", dt, {5});
  std::vector<std::string> ops = {"neg", "abs", "sign", "relu", "square"};
  if (is_float(dt))
    ops.insert(ops.end(),
               {"tanh", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "round", "sigmoid"});
  else ops.push_back("bit_not");
  for (const std::string& op : ops) b.result(op, b.op(op, {x}, dt, {5}));
  return b;
}

/// Casts from `from` to every other dtype.
inline FnBuilder casts_case(DType from) {
  FnBuilder b;
  int x = b.param("x", from, {6});
  for (DType to : cast_dtypes())
    if (to != from) b.result(fmt::format("{}_to_{}", dtype_name(from), dtype_name(to)), b.op("cast", {x}, to, {6}));
  return b;
}

// Mixed precision's roundings in an expr (compiler/train/passes/fuse_round_into_expr.cpp): f32 cast to
// bf16 or f16 and straight back, the 16-bit value read by nothing else, alone and between arithmetic.
inline FnBuilder rounding_casts_case() {
  FnBuilder b;
  int x = b.param("x", DType::F32, {6});
  for (DType narrow : {DType::BF16, DType::F16}) {
    const std::string name(dtype_name(narrow));
    auto round = [&](int v) {
      int d = b.op("cast", {v}, narrow, {6}, {{"dtype", Value::make_symbol(name)}});
      return b.op("cast", {d}, DType::F32, {6}, {{"dtype", Value::make_symbol("f32")}});
    };
    b.result("round_" + name, round(x));
    int y = round(b.op("mul", {x, x}, DType::F32, {6}));
    b.result("sum_" + name, b.op("add", {y, round(b.op("neg", {x}, DType::F32, {6}))}, DType::F32, {6}));
  }
  return b;
}

inline FnBuilder bool_logic_case() {
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
  return b;
}

inline FnBuilder broadcasting_case() {
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
  return b;
}

inline FnBuilder structural_case() {
  FnBuilder b;
  int x = b.param("x", DType::F32, {4, 6});
  int bytes = b.param("bytes", DType::U8, {3});
  int idx = b.param("idx", DType::I64, {5});
  b.result("slice",
           b.op("slice", {x}, DType::F32, {2, 3},
                Attrs{{"starts", int_list({1, -1})}, {"stops", int_list({3, 0})}, {"steps", int_list({1, -2})}}));
  b.result("gather", b.op("gather", {x}, DType::F32, {4, 3},
                          Attrs{{"axis", Value::make_int(1)}, {"indices", int_list({5, 0, -3})}}));
  b.result("gather_affine",
           b.op("gather", {x}, DType::F32, {2, 6}, Attrs{{"axis", Value::make_int(0)}, {"indices", int_list({1, 3})}}));
  b.result("reshape", b.op("reshape", {x}, DType::F32, {3, 8}, Attrs{{"shape", int_list({3, 8})}}));
  int e = b.op("expand_dims", {x}, DType::F32, {4, 1, 6}, Attrs{{"axis", Value::make_int(1)}});
  b.result("expand_dims", e);
  b.result("squeeze", b.op("squeeze", {e}, DType::F32, {4, 6}, Attrs{{"axis", Value::make_int(1)}}));
  b.result("transpose", b.op("transpose", {x}, DType::F32, {6, 4}, Attrs{{"perm", int_list({1, 0})}}));
  b.result("concat", b.op("concat", {x, x}, DType::F32, {4, 12}, Attrs{{"axis", Value::make_int(1)}}));
  b.result("stack", b.op("stack", {x, x, x}, DType::F32, {4, 3, 6}, Attrs{{"axis", Value::make_int(1)}}));
  int bits = b.op("unpack_bits", {bytes}, DType::U8, {24});
  b.result("unpack_bits", bits);
  b.result("pack_bits", b.op("pack_bits", {bits}, DType::U8, {3}));
  b.result("one_hot", b.op("one_hot", {idx}, DType::F32, {5, 7}, Attrs{{"depth", Value::make_int(7)}}));
  return b;
}

// unpack_bits followed by reshapes, gathers and slices: the loop-nest lowering splits bit offsets
// along multiples of 8, folds index tables, and reads the bits of a whole inner loop from one word
// (see unpack_bits_from_word in compiler/codegen/loop_nest.cpp). Each result takes a different
// branch: 3-byte (u32) and 8-byte (u64) words from a gather table, a plain loop index, offsets that are
// not byte aligned, a reversed slice (no proof of non-negativity), and a gather not covering its axis.
inline FnBuilder unpack_bits_rewrites_case() {
  FnBuilder b;
  int bytes = b.param("bytes", DType::U8, {24});
  int bits = b.op("unpack_bits", {bytes}, DType::U8, {192});
  int sq = b.op("reshape", {bits}, DType::U8, {8, 24}, Attrs{{"shape", int_list({8, 24})}});
  b.result("planes_u32", b.op("gather", {sq}, DType::U8, {8, 24},
                              Attrs{{"axis", Value::make_int(1)},
                                    {"indices", int_list({0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                                          2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23})}}));
  int wide = b.op("reshape", {bits}, DType::U8, {3, 64}, Attrs{{"shape", int_list({3, 64})}});
  std::vector<int64_t> rev64;
  for (int64_t i = 63; i >= 0; --i) rev64.push_back(i % 2 ? i : 63 - i);
  b.result("planes_u64", b.op("gather", {wide}, DType::U8, {3, 64},
                              Attrs{{"axis", Value::make_int(1)}, {"indices", int_list(rev64)}}));
  b.result("partial_gather", b.op("gather", {wide}, DType::U8, {3, 2},
                                  Attrs{{"axis", Value::make_int(1)}, {"indices", int_list({9, 2})}}));
  b.result("aligned_slice",
           b.op("slice", {bits}, DType::U8, {16},
                Attrs{{"starts", int_list({8})}, {"stops", int_list({24})}, {"steps", int_list({1})}}));
  b.result("unaligned_slice",
           b.op("slice", {bits}, DType::U8, {16},
                Attrs{{"starts", int_list({3})}, {"stops", int_list({19})}, {"steps", int_list({1})}}));
  b.result("reversed", b.op("slice", {bits}, DType::U8, {192},
                            Attrs{{"starts", int_list({-1})}, {"stops", int_list({-193})}, {"steps", int_list({-1})}}));
  b.result("as_f32", b.op("cast", {b.op("reshape", {bits}, DType::U8, {2, 96}, Attrs{{"shape", int_list({2, 96})}})},
                          DType::F32, {2, 96}));
  return b;
}

/// The chess board of seed 002: unpack_bits, a slice, a reshape and a plane gather.
inline FnBuilder chess_board_case() {
  FnBuilder b;
  int d = b.param("d", DType::U8, {194});
  int bits = b.op("unpack_bits", {d}, DType::U8, {1552});
  int board = b.op("slice", {bits}, DType::U8, {1536},
                   Attrs{{"starts", int_list({0})}, {"stops", int_list({1536})}, {"steps", int_list({1})}});
  board = b.op("reshape", {board}, DType::U8, {8, 8, 24}, Attrs{{"shape", int_list({8, 8, 24})}});
  board =
      b.op("gather", {board}, DType::U8, {8, 8, 24},
           Attrs{{"axis", Value::make_int(2)}, {"indices", int_list({0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                                                     2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23})}});
  b.result("board", b.op("cast", {board}, DType::F32, {8, 8, 24}));
  return b;
}

/// sum, prod, mean, reduce_max and reduce_min over one, two (not contiguous) and all axes.
inline FnBuilder reductions_case(DType dt) {
  FnBuilder b;
  int x = b.param("x", dt, {3, 4, 5});
  const DType sum_t = dt == DType::Bool ? DType::I64 : dt;
  auto axis = [](std::vector<int64_t> v) { return Attrs{{"axis", int_list(v)}}; };
  b.result("sum_all", b.op("sum", {x}, sum_t, {}));
  b.result("sum_1", b.op("sum", {x}, sum_t, {3, 5}, axis({1})));
  b.result("sum_02", b.op("sum", {x}, sum_t, {4}, axis({0, -1})));  // not contiguous
  b.result("prod_2", b.op("prod", {x}, sum_t, {3, 4}, axis({2})));
  b.result("mean_0", b.op("mean", {x}, is_float(dt) ? dt : DType::F32, {4, 5}, axis({0})));
  b.result("max_1", b.op("reduce_max", {x}, dt, {3, 5}, axis({1})));
  b.result("min_all", b.op("reduce_min", {x}, dt, {}));
  return b;
}

/// Reductions inside reductions and element-wise math around them: a sum of row maxima, a mean of
/// an expression of a sum (the inner fold does not depend on the outer loop's variable).
inline FnBuilder nested_reductions_case() {
  FnBuilder b;
  auto axis = [](std::vector<int64_t> v) { return Attrs{{"axis", int_list(v)}}; };
  int x = b.param("x", DType::F32, {4, 5});
  int y = b.param("y", DType::I32, {3, 4});
  int row_max = b.op("reduce_max", {x}, DType::F32, {4}, axis({1}));
  b.result("sum_of_max", b.op("sum", {row_max}, DType::F32, {}));
  int total = b.op("sum", {y}, DType::I32, {});
  int shifted = b.op("sub", {y, total}, DType::I32, {3, 4});
  b.result("mean_shifted", b.op("mean", {shifted}, DType::F32, {3}, axis({1})));
  int sq = b.op("square", {x}, DType::F32, {4, 5});
  b.result("norm", b.op("sqrt", {b.op("sum", {sq}, DType::F32, {4}, axis({1}))}, DType::F32, {4}));
  return b;
}

/// Every random op: uniform (f32, f64, per-element bounds), normal (odd counts take a spare), int
/// (a range that rejects draws, one that cannot, one over 2^32 values).
inline FnBuilder random_ops_case() {
  FnBuilder b;
  int lo = b.param("lo", DType::F32, {});
  int hi = b.param("hi", DType::F64, {3});
  auto attrs = [](int64_t op_id, std::vector<int64_t> shape, bool seeded) {
    Attrs a{{"op_id", Value::make_int(op_id)}, {"shape", int_list(shape)}};
    if (seeded) a["seed"] = Value::make_int(1234);
    return a;
  };
  b.result("uniform", b.op("random_uniform", {}, DType::F32, {2, 3}, attrs(1, {2, 3}, false)));
  b.result("uniform_lohi", b.op("random_uniform", {lo, hi}, DType::F32, {3}, attrs(2, {3}, true)));
  b.result("uniform_f64", b.op("random_uniform", {}, DType::F64, {4}, attrs(3, {4}, false)));
  b.result("normal", b.op("random_normal", {}, DType::F32, {5}, attrs(4, {5}, false)));  // odd: a spare normal
  b.result("normal_ms", b.op("random_normal", {hi, hi}, DType::F64, {3}, attrs(5, {3}, true)));
  auto int_range = [&](int64_t l, int64_t h, int64_t op_id, std::vector<int64_t> shape) {
    int cl = b.constant(Value::make_int(l), DType::I64, {});
    int ch = b.constant(Value::make_int(h), DType::I64, {});
    return b.op("random_int", {cl, ch}, DType::I64, shape, attrs(op_id, shape, false));
  };
  int l = b.constant(Value::make_int(-5), DType::I64, {});
  int h = b.constant(Value::make_int(1000), DType::I64, {});
  b.result("int", b.op("random_int", {l, h}, DType::I32, {7}, attrs(6, {7}, false)));
  b.result("int_pow2", int_range(-8, 8, 7, {9}));
  // 3 * 2^30 values: 2^32 mod n = 2^30, a quarter of the draws are rejected, so values shift.
  b.result("int_rejecting", int_range(0, 3LL << 30, 8, {40}));
  b.result("int_wide", int_range(-(1LL << 40), 3LL << 40, 9, {5}));
  return b;
}

struct OpCase {
  std::string name;
  FnBuilder fn;
  int64_t rows;
  uint64_t seed;
};

/// Every case above (each dtype of the parametrized ones), as the CUDA tests run them.
inline std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> v;
  for (DType dt : numeric_dtypes()) v.push_back({fmt::format("binary_{}", dtype_name(dt)), binary_ops_case(dt), 41, 7});
  for (DType dt : numeric_dtypes()) v.push_back({fmt::format("unary_{}", dtype_name(dt)), unary_ops_case(dt), 53, 11});
  for (DType dt : cast_dtypes()) v.push_back({fmt::format("casts_{}", dtype_name(dt)), casts_case(dt), 67, 3});
  v.push_back({"rounding_casts", rounding_casts_case(), 67, 3});
  v.push_back({"bool_logic", bool_logic_case(), 29, 5});
  v.push_back({"broadcasting", broadcasting_case(), 17, 9});
  v.push_back({"structural", structural_case(), 23, 13});
  v.push_back({"unpack_bits_rewrites", unpack_bits_rewrites_case(), 29, 17});
  v.push_back({"chess_board", chess_board_case(), 19, 23});
  for (DType dt : reduction_dtypes())
    v.push_back({fmt::format("reductions_{}", dtype_name(dt)), reductions_case(dt), 19, 23});
  v.push_back({"nested_reductions", nested_reductions_case(), 21, 29});
  v.push_back({"random_ops", random_ops_case(), 31, 17});
  return v;
}

}  // namespace pipec::testing

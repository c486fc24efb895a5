// The JIT's roundings to bf16 and f16 (a cast of an f32 to 16 bits and straight back: mixed precision's
// round nodes fused into expr nodes, compiler/train/passes/fuse_round_into_expr.cpp): bit for bit the
// round nodes' loops (runtime/train/math/round_16bit.h) and the interpreter's casts, NaN payloads
// included, over every value of the top 16 bits with low halves at and around each type's ties; and a
// 16-bit value read by anything but a cast back to f32 stays on the interpreter.
#include <gtest/gtest.h>

#include <bit>

#include "compiler/codegen/loop_nest.h"
#include "runtime/train/math/round_16bit.h"
#include "tests/unit/codegen_op_cases.h"

namespace pipec {
namespace {

using testing::FnBuilder;

constexpr int64_t kWidth = 256;  // values per row

FnBuilder rounding(DType narrow) {
  FnBuilder b;
  int x = b.param("x", DType::F32, {kWidth});
  int d = b.op("cast", {x}, narrow, {kWidth}, {{"dtype", Value::make_symbol(std::string(dtype_name(narrow)))}});
  b.result("y", b.op("cast", {d}, DType::F32, {kWidth}, {{"dtype", Value::make_symbol("f32")}}));
  return b;
}

// Every top half with low halves around bf16's ties (0x8000) and f16's (0x1000 at each value of bits
// 13-15), the ends, and a few arbitrary ones; rounded up to whole rows.
std::vector<uint32_t> bit_patterns() {
  std::vector<uint32_t> low = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x4000, 0xc000, 0x1234, 0xfedc};
  for (uint32_t k = 0; k < 8; ++k)
    for (uint32_t t : {0x0fffu, 0x1000u, 0x1001u, 0x0000u, 0x1fffu}) low.push_back((k << 13) | t);
  std::vector<uint32_t> out;
  for (uint32_t high = 0; high < 0x10000u; ++high)
    for (uint32_t l : low) out.push_back((high << 16) | l);
  while (out.size() % kWidth != 0) out.push_back(0x7f800001u);  // a signalling NaN
  return out;
}

TEST(CodegenRounding, BitForBitTheRoundNodes) {
  const std::vector<uint32_t> bits = bit_patterns();
  const int64_t n = static_cast<int64_t>(bits.size());
  for (DType narrow : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtype_name(narrow));
    FnBuilder b = rounding(narrow);
    Plan plan = testing::one_map_plan(b);
    codegen::JitOptions opts;
    opts.use_cache = false;
    codegen::JitReport rep = codegen::attach_native_kernels(plan, opts);
    ASSERT_TRUE(rep.stages.at(0).native) << rep.stages[0].why_not;
    Chunk in;
    in.rows = n / kWidth;
    Column c;
    c.dense = Tensor::empty(DType::F32, {in.rows, kWidth});
    std::memcpy(c.dense.raw(), bits.data(), bits.size() * 4);
    in.columns.push_back(c);
    std::vector<Column> got;
    ASSERT_TRUE(run_native(plan.stages[1], {"x"}, in, 0, got));
    std::vector<Column> interpreted = run_function(*plan.stages[1].fn, {"x"}, in, EvalContext{});
    std::vector<float> want(bits.size());
    const float* x = c.dense.data<float>();
    if (narrow == DType::BF16) round_to_bf16_scalar(x, want.data(), n);
    else round_to_f16_scalar(x, want.data(), n);
    const uint32_t* g = reinterpret_cast<const uint32_t*>(got.at(0).dense.data<float>());
    const uint32_t* r = reinterpret_cast<const uint32_t*>(interpreted.at(0).dense.data<float>());
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t w = std::bit_cast<uint32_t>(want[static_cast<size_t>(i)]);
      if (g[i] == w && r[i] == w) continue;
      if (mismatches++ < 5)
        ADD_FAILURE() << std::hex << "0x" << bits[static_cast<size_t>(i)] << ": jit 0x" << g[i] << ", interpreter 0x"
                      << r[i] << ", round node 0x" << w;
    }
    EXPECT_EQ(mismatches, 0) << "of " << n;
  }
}

TEST(CodegenRounding, MatchesTheInterpreterInsideArithmetic) {
  testing::expect_jit_matches(testing::rounding_casts_case(), 67, 3);
}

// Arithmetic on a 16-bit value is not compiled: the function stays on the interpreter and says why.
TEST(CodegenRounding, Other16BitValuesStayOnTheInterpreter) {
  FnBuilder b;
  int x = b.param("x", DType::F32, {4});
  int d = b.op("cast", {x}, DType::BF16, {4}, {{"dtype", Value::make_symbol("bf16")}});
  int sum = b.op("add", {d, d}, DType::BF16, {4});
  b.result("y", b.op("cast", {sum}, DType::F32, {4}, {{"dtype", Value::make_symbol("f32")}}));
  codegen::LoopNest nest;
  std::string why;
  EXPECT_FALSE(codegen::lower_to_loop_nest(b.fn, {"x"}, nest, why));
  EXPECT_NE(why.find("dtype bf16"), std::string::npos) << why;
  // A 16-bit result too.
  FnBuilder r;
  int y = r.param("x", DType::F32, {4});
  r.result("y", r.op("cast", {y}, DType::F16, {4}, {{"dtype", Value::make_symbol("f16")}}));
  EXPECT_FALSE(codegen::lower_to_loop_nest(r.fn, {"x"}, nest, why));
}

}  // namespace
}  // namespace pipec

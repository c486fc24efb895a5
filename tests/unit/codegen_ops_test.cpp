// JIT kernels against the interpreter, op by op: every supported element-wise op on every dtype it is
// defined for, casts between all numeric dtypes, broadcasting, and the structural ops, on random
// inputs mixed with edge values (NaN, +-inf, -0.0, integer min/max, zero divisors, big shift counts).
// Results must be bit-identical (NaN payloads aside). The cases are codegen_op_cases.h's, which the
// CUDA printer's tests (cuda_ops_test.cpp) run too.
#include <gtest/gtest.h>

#include <set>

#include "compiler/codegen/loop_nest.h"

#include "tests/unit/codegen_op_cases.h"

namespace pipec {
namespace {

using testing::expect_jit_matches;
using testing::FnBuilder;

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) {
  return std::string(dtype_name(info.param));
}

class BinaryOps : public ::testing::TestWithParam<DType> {};
TEST_P(BinaryOps, MatchInterpreterWithBroadcasting) { expect_jit_matches(testing::binary_ops_case(GetParam()), 41, 7); }
INSTANTIATE_TEST_SUITE_P(AllDtypes, BinaryOps, ::testing::ValuesIn(testing::numeric_dtypes()), dtype_param_name);

class UnaryOps : public ::testing::TestWithParam<DType> {};
TEST_P(UnaryOps, MatchInterpreter) { expect_jit_matches(testing::unary_ops_case(GetParam()), 53, 11); }
INSTANTIATE_TEST_SUITE_P(AllDtypes, UnaryOps, ::testing::ValuesIn(testing::numeric_dtypes()), dtype_param_name);

class Casts : public ::testing::TestWithParam<DType> {};
TEST_P(Casts, FromOneDtypeToEveryOther) { expect_jit_matches(testing::casts_case(GetParam()), 67, 3); }
INSTANTIATE_TEST_SUITE_P(AllDtypes, Casts, ::testing::ValuesIn(testing::cast_dtypes()), dtype_param_name);

TEST(CodegenOps, BoolLogicWhereAndBitOps) { expect_jit_matches(testing::bool_logic_case(), 29, 5); }
TEST(CodegenOps, BroadcastingShapesAndConstants) { expect_jit_matches(testing::broadcasting_case(), 17, 9); }
TEST(CodegenOps, StructuralOps) { expect_jit_matches(testing::structural_case(), 23, 13); }
TEST(CodegenOps, UnpackBitsThroughIndexRewrites) { expect_jit_matches(testing::unpack_bits_rewrites_case(), 29, 17); }

// The chess board loop of seed 002 after lowering: no division or remainder is left in the index
// arithmetic (the bit address of every element is a square's 3-byte word and a per-plane shift).
TEST(CodegenOps, ChessBoardLoopHasNoDivisions) {
  FnBuilder b = testing::chess_board_case();
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
      EXPECT_TRUE(n.index_op != codegen::IndexOp::Div && n.index_op != codegen::IndexOp::Mod)
          << "n" << id << " idx." << codegen::index_op_name(n.index_op);
    }
    if (n.kind == codegen::NodeKind::Load) ++loads;
    for (int a : n.args) todo.push_back(a);
  }
  EXPECT_EQ(loads, 3);  // the square's three bytes
  expect_jit_matches(b, 19, 23);
}

class Reductions : public ::testing::TestWithParam<DType> {};
TEST_P(Reductions, FoldInTheInterpretersOrder) { expect_jit_matches(testing::reductions_case(GetParam()), 19, 23); }
INSTANTIATE_TEST_SUITE_P(AllDtypes, Reductions, ::testing::ValuesIn(testing::reduction_dtypes()), dtype_param_name);

TEST(CodegenOps, NestedReductions) { expect_jit_matches(testing::nested_reductions_case(), 21, 29); }

TEST(CodegenOps, RandomOpsDrawTheInterpretersStreams) { expect_jit_matches(testing::random_ops_case(), 31, 17); }

}  // namespace
}  // namespace pipec

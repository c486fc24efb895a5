// The chess map (seed 002) compiled by the JIT against the interpreter: on the conformance fixture's
// real records, on random packed positions with edge-value scores, and through whole pipeline runs.
#include <gtest/gtest.h>

#include "compiler/codegen/stage_kernel.h"
#include "runtime/exec/pipeline_run.h"
#include "tests/unit/codegen_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

using testing::same_bits;

const std::string kFixture = std::string(PIPEC_SOURCE_DIR) + "/tests/conformance/fixtures/chess_seed002";

struct ChessPlan {
  std::unique_ptr<Program> program;
  Plan plan;
  int map = -1;
};

ChessPlan load_chess() {
  ChessPlan c;
  CompileRequest request;
  request.path = kFixture + "/spec.pipe";
  request.pipeline = "train";
  request.options = testing::lowered_only();
  CompileResult r = compile(request);
  EXPECT_TRUE(r.ok()) << testing::compile_problems(r);
  if (!r.ok()) return c;
  c.program = std::move(r.program);
  c.plan = std::move(r.pipelines[0].plan);
  for (size_t i = 0; i < c.plan.stages.size(); ++i)
    if (c.plan.stages[i].kind == StageKind::Map) c.map = static_cast<int>(i);
  return c;
}

std::vector<Chunk> run_all(const Plan& plan) {
  RunOptions ro;
  ro.spec_dir = kFixture;
  ro.threads = 2;
  PipelineRun run(plan, ro);
  std::vector<Chunk> out;
  Chunk c;
  while (run.next(c)) out.push_back(c);
  return out;
}

TEST(CodegenChess, MapCompiles) {
  ChessPlan c = load_chess();
  ASSERT_GE(c.map, 0);
  codegen::LoopNest nest;
  std::string why;
  ASSERT_TRUE(codegen::stage_loop_nest(c.plan, c.map, nest, why)) << why;
  ASSERT_EQ(nest.outputs.size(), 3u);
  EXPECT_EQ(nest.outputs[0].shape, (std::vector<int64_t>{8, 8, 24}));
  // The board is index arithmetic on the packed bytes: no intermediate buffer, one gather table.
  EXPECT_EQ(nest.inputs.size(), 2u);
}

TEST(CodegenChess, KernelIsBitExactOnFixtureRecords) {
  ChessPlan c = load_chess();
  Plan sources = c.plan;
  sources.stages.resize(static_cast<size_t>(c.map));  // the map's input
  std::vector<Chunk> inputs = run_all(sources);
  ASSERT_FALSE(inputs.empty());
  codegen::JitOptions opts;
  opts.use_cache = false;
  codegen::JitReport rep = codegen::attach_native_kernels(c.plan, opts);
  ASSERT_EQ(rep.compiled, 1) << rep.summary();
  const Stage& m = c.plan.stages[c.map];
  std::vector<std::string> names;
  for (const Field& f : c.plan.stages[m.inputs[0]].element.fields) names.push_back(f.name);
  int64_t rows = 0;
  for (const Chunk& in : inputs) {
    std::vector<Column> want = run_function(*m.fn, names, in, EvalContext{});
    std::vector<Column> got;
    ASSERT_TRUE(run_native(m, names, in, 0, got));
    for (size_t j = 0; j < want.size(); ++j)
      EXPECT_TRUE(same_bits(want[j].dense, got[j].dense, m.fn->results[j].first));
    rows += in.rows;
  }
  EXPECT_EQ(rows, 27);
}

TEST(CodegenChess, KernelIsBitExactOnRandomPositions) {
  ChessPlan c = load_chess();
  codegen::JitOptions opts;
  opts.use_cache = false;
  ASSERT_EQ(codegen::attach_native_kernels(c.plan, opts).compiled, 1);
  const Stage& m = c.plan.stages[c.map];
  std::vector<std::string> names;
  for (const Field& f : c.plan.stages[m.inputs[0]].element.fields) names.push_back(f.name);
  std::mt19937_64 rng(2);
  const int64_t rows = 300;
  std::vector<std::string> packed;
  for (int64_t r = 0; r < rows; ++r) {
    std::string s(194, '\0');
    for (char& ch : s) ch = static_cast<char>(rng());
    packed.push_back(s);
  }
  Tensor scores = Tensor::empty(DType::I64, {rows});
  const int64_t edges[] = {0, 1, -1, 10, -10, 9, 11, 400, -400, INT64_MAX, INT64_MIN, 123456789};
  for (int64_t r = 0; r < rows; ++r)
    scores.data<int64_t>()[r] = r < 12 ? edges[r] : static_cast<int64_t>(rng() % 4001) - 2000;
  Chunk in;
  in.rows = rows;
  Column d, s;
  d.dense = Tensor::from_strings(packed, {rows});  // as the tfrecord source delivers bytes[194]
  s.dense = scores;
  in.columns = {d, s};
  std::vector<Column> want = run_function(*m.fn, names, in, EvalContext{});
  std::vector<Column> got;
  ASSERT_TRUE(run_native(m, names, in, 0, got));
  for (size_t j = 0; j < want.size(); ++j) EXPECT_TRUE(same_bits(want[j].dense, got[j].dense, m.fn->results[j].first));
}

TEST(CodegenChess, PipelineOutputIsTheSameWithAndWithoutKernels) {
  ChessPlan c = load_chess();
  std::vector<Chunk> want = run_all(c.plan);
  codegen::JitOptions opts;
  opts.use_cache = false;
  ASSERT_EQ(codegen::attach_native_kernels(c.plan, opts).compiled, 1);
  std::vector<Chunk> got = run_all(c.plan);
  ASSERT_EQ(want.size(), got.size());
  ASSERT_EQ(want.size(), 3u);
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < want[i].columns.size(); ++j)
      EXPECT_TRUE(same_bits(want[i].columns[j].dense, got[i].columns[j].dense, "batch " + std::to_string(i)));
}

}  // namespace
}  // namespace pipec

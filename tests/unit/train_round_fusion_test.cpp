// Mixed precision's round nodes fused into expr nodes (compiler/train/passes/fuse_round_into_expr.cpp,
// fuse_round_into_expr_inputs.cpp): on the chess net the step keeps only the round nodes next to layers,
// the fused expr nodes still run compiled, and training on the fused graph gives the unfused graph's
// losses and weights bit for bit, on the fast executor (compiled kernels, both kinds of layer kernels)
// and on the reference.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/train/passes/step_passes.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

const std::vector<std::string> kFusions = {"fuse_round_into_expr", "fuse_round_into_expr_inputs"};

// The step graph with every step pass, or without the two fusions (`--disable-pass`), its expr nodes
// compiled by the JIT.
ModelGraph step_graph(const std::string& spec, bool fused) {
  CompileRequest request;
  request.path = "t.pipe";
  request.text = spec;
  request.target = CompileTarget::CheckOnly;
  if (!fused) request.options.passes.disabled = kFusions;
  CompileResult r = compile(request);
  EXPECT_TRUE(r.ok()) << r.error;
  if (!r.ok()) return {};
  ModelGraph g = r.trains.at(0).program.step;
  codegen::JitOptions jit;
  jit.use_cache = false;
  codegen::JitReport report = codegen::attach_step_kernels(g, jit);
  for (const codegen::StageJitStatus& s : report.stages)
    EXPECT_TRUE(s.native) << "node " << s.stage << ": " << s.why_not;
  return g;
}

int count(const ModelGraph& g, ModelOp op) {
  int n = 0;
  for (const GraphNode& node : g.nodes) n += node.op == op;
  return n;
}

// Whether the expr node's function casts to `narrow` and straight back to f32 somewhere.
bool rounds_inside(const GraphNode& n, DType narrow) {
  for (const Instr& i : n.fn->body)
    if (i.op == OpKind::Cast && i.type.dtype == narrow) return true;
  return false;
}

TEST(RoundFusion, ChessStepRoundsInsideItsExprs) {
  for (const char* precision : {"mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision);
    const DType narrow = std::string(precision) == "mixed_bf16" ? DType::BF16 : DType::F16;
    const ModelGraph unfused = step_graph(testing::chess_train_spec(precision), false);
    const ModelGraph fused = step_graph(testing::chess_train_spec(precision), true);
    // Every expr output was rounded by a round node (9), and 7 more round nodes rounded values only expr
    // nodes read (the flags, 5 layer outputs and the loss gradient): 35 round nodes become 19.
    EXPECT_EQ(count(unfused, ModelOp::Round), 35);
    EXPECT_EQ(count(fused, ModelOp::Round), 19);
    EXPECT_EQ(count(fused, ModelOp::Expr), count(unfused, ModelOp::Expr));
    std::vector<int> producer(fused.values.size(), -1);
    std::vector<std::vector<int>> readers(fused.values.size());
    for (size_t i = 0; i < fused.nodes.size(); ++i) {
      for (int v : fused.nodes[i].outputs) producer[v] = static_cast<int>(i);
      for (int v : fused.nodes[i].inputs) readers[v].push_back(static_cast<int>(i));
    }
    for (const GraphNode& n : fused.nodes) {
      if (n.op == ModelOp::Expr) {
        EXPECT_TRUE(rounds_inside(n, narrow)) << n.fn->name;
        EXPECT_NE(n.native, nullptr) << n.fn->name << " is not compiled";
      }
      if (n.op != ModelOp::Round) continue;
      // What is left rounds a layer's output or a parameter, for a layer.
      const int p = producer[n.inputs[0]];
      EXPECT_TRUE(p < 0 || fused.nodes[p].op != ModelOp::Expr) << "a round node after an expr";
      bool layer_reads = readers[n.outputs[0]].empty();  // a parameter gradient: the optimizer's
      for (int r : readers[n.outputs[0]]) layer_reads = layer_reads || fused.nodes[r].op != ModelOp::Expr;
      EXPECT_TRUE(layer_reads) << "a round node read by expr nodes alone";
    }
    // -O0 fuses nothing: the reference runs the graph as mixed_precision made it.
    CompileRequest o0;
    o0.path = "t.pipe";
    o0.text = testing::chess_train_spec(precision);
    o0.target = CompileTarget::CheckOnly;
    o0.options.passes.opt_level = 0;
    CompileResult r = compile(o0);
    ASSERT_TRUE(r.ok()) << r.error;
    for (const GraphNode& n : r.trains.at(0).program.step.nodes) {
      if (n.op == ModelOp::Expr) {
        EXPECT_FALSE(rounds_inside(n, narrow)) << n.fn->name;
      }
    }
  }
}

struct Trajectory {
  std::vector<double> losses;
  std::vector<float> params;
  std::vector<Tensor> outputs;  // the model's output after each step's forward pass
};

template <class Executor, class... Options>
Trajectory train(const ModelGraph& g, int steps, Options... options) {
  Executor ex(g, 11, options...);
  Trajectory t;
  t.losses = testing::run_random_update_steps(ex, g, steps);
  t.params = ex.buffers().params;
  if constexpr (std::is_same_v<Executor, FastExecutor>) {
    EXPECT_GT(ex.expr_kernel_runs(), 0);
    EXPECT_EQ(ex.expr_fallbacks(), 0);
  }
  return t;
}

void expect_same_bits(const Trajectory& want, const Trajectory& got, const std::string& what) {
  ASSERT_EQ(want.losses.size(), got.losses.size());
  for (size_t s = 0; s < want.losses.size(); ++s)
    EXPECT_EQ(want.losses[s], got.losses[s]) << what << ", step " << s + 1;
  ASSERT_EQ(want.params.size(), got.params.size());
  size_t differ = 0;
  for (size_t i = 0; i < want.params.size(); ++i)
    differ += std::memcmp(&want.params[i], &got.params[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << what << ": weights that differ, of " << want.params.size();
}

FastExecutorOptions on(CpuBf16 how) {
  FastExecutorOptions o;
  o.threads = 2;
  o.cpu_bf16 = how;
  return o;
}

// 5 Adam steps of the chess net from the same weights on the same batches: the fused graph's losses and
// weights are the unfused graph's, bit for bit, on each executor (the casts round as the round nodes do,
// and nothing else changes: the same layers read the same values in the same order).
TEST(RoundFusion, TrainsBitForBitAsTheRoundNodes) {
  for (const char* precision : {"mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision);
    const ModelGraph unfused = step_graph(testing::chess_train_spec(precision), false);
    const ModelGraph fused = step_graph(testing::chess_train_spec(precision), true);
    expect_same_bits(train<FastExecutor>(unfused, 5, on(CpuBf16::Emulated)),
                     train<FastExecutor>(fused, 5, on(CpuBf16::Emulated)), "fast executor, f32 kernels");
    if (std::string(precision) == "mixed_bf16" && train::CpuKernels::bf16_kernels_exist())
      expect_same_bits(train<FastExecutor>(unfused, 5, on(CpuBf16::Native)),
                       train<FastExecutor>(fused, 5, on(CpuBf16::Native)), "fast executor, bf16 kernels");
    expect_same_bits(train<ReferenceExecutor<float>>(unfused, 5), train<ReferenceExecutor<float>>(fused, 5),
                     "reference executor");
  }
}

// `--disable-pass` names the step passes too (not the semantic ones), and `pipec explain` shows the graph
// without them.
TEST(RoundFusion, DisablePassKeepsTheRoundNodes) {
  EXPECT_TRUE(is_optional_step_pass("fuse_round_into_expr"));
  EXPECT_TRUE(is_optional_step_pass("fuse_round_into_expr_inputs"));
  EXPECT_FALSE(is_optional_step_pass("mixed_precision"));  // semantic: it always runs
  ModelGraph g = testing::compile_train(testing::chess_train_spec("mixed_bf16")).step;
  std::vector<std::string> report = run_step_passes(g, 1, kFusions);
  for (const std::string& line : report) EXPECT_EQ(line.find("fuse_round"), std::string::npos) << line;

  testing::ScratchDir d;
  testing::write_file(d / "t.pipe", testing::chess_train_spec("mixed_bf16"));
  const std::string spec = (d / "t.pipe").string();
  auto fused = testing::run_pipec({"explain", spec});
  auto unfused = testing::run_pipec(
      {"explain", spec, "--disable-pass", "fuse_round_into_expr", "--disable-pass", "fuse_round_into_expr_inputs"});
  ASSERT_EQ(fused.exit_code, 0) << fused.err;
  ASSERT_EQ(unfused.exit_code, 0) << unfused.err;
  auto rounds = [](const std::string& text) {
    int n = 0;
    for (size_t at = text.find("= round("); at != std::string::npos; at = text.find("= round(", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(rounds(fused.out), 19) << fused.out;
  EXPECT_EQ(rounds(unfused.out), 35) << unfused.out;
  auto semantic = testing::run_pipec({"explain", spec, "--disable-pass", "mixed_precision"});
  EXPECT_EQ(semantic.exit_code, 2);
  EXPECT_NE(semantic.err.find("unknown pass `mixed_precision`"), std::string::npos) << semantic.err;
  EXPECT_NE(semantic.err.find("fuse_round_into_expr_inputs"), std::string::npos) << semantic.err;
}

}  // namespace
}  // namespace pipec

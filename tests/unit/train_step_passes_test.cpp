// The step graph's passes (compiler/train/passes): what each rewrites, that -O0 runs none, and the
// choice of executor on the command line.
#include <gtest/gtest.h>

#include <cstdlib>

#include "compiler/train/passes/step_passes.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

const char* kSpec = R"(source s = tfrecord("x.tfrecord") { x: f32[6, 6, 2], y: f32[1] }
pipeline data = s | batch(4, drop_remainder = true)
model net(x: f32[6, 6, 2]) -> f32[1] {
  h = x | conv2d(3, 3, padding = same) | relu
  k = h | conv2d(3, 3) | relu
  p = flatten(h) | dense(4)
  q = p | relu
  z = q + p
  z | dense(1) | relu
}
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 1 }
)";

int count_op(const ModelGraph& g, ModelOp op, bool fused) {
  int n = 0;
  for (const GraphNode& node : g.nodes) n += node.op == op && fused_activation(node.attrs).has_value() == fused;
  return n;
}

int count_relu_nodes(const ModelGraph& g) {
  int n = 0;
  for (const GraphNode& node : g.nodes)
    if (node.op == ModelOp::Expr && node.phase == OpCategory::Forward)
      for (const Instr& i : node.fn->body) n += i.op == OpKind::Relu;
  return n;
}

TEST(StepPasses, FuseActivationFoldsARelu) {
  CompileRequest request;
  request.path = "t.pipe";
  request.text = kSpec;
  request.target = CompileTarget::CheckOnly;
  request.options.passes.opt_level = 0;
  CompileResult r = compile(request);
  ASSERT_TRUE(r.ok()) << r.error;
  ModelGraph g = r.trains.at(0).program.step;
  // The second conv2d's output is never used (its relu's neither): it is not in the graph at all.
  ASSERT_EQ(count_op(g, ModelOp::Conv2d, false), 1);
  ASSERT_EQ(count_relu_nodes(g), 3);
  const size_t nodes = g.nodes.size();
  // conv2d | relu fuses (the relu's output may have any readers), and so does the last dense | relu
  // (the model's output is the relu's); dense(4)'s pre-activation p is read by the add too, so it must
  // exist: not fused.
  int rewrites = fuse_activation(g);
  EXPECT_EQ(rewrites, 2);
  EXPECT_EQ(count_op(g, ModelOp::Conv2d, true), 1);
  EXPECT_EQ(count_op(g, ModelOp::Dense, true), 1);
  EXPECT_EQ(count_op(g, ModelOp::Dense, false), 1);
  EXPECT_EQ(count_relu_nodes(g), 1);
  EXPECT_EQ(g.nodes.size(), nodes - 2);
  EXPECT_TRUE(verify_model_graph(g).empty());
  // Default options run the passes: the compiled graph is the rewritten one.
  ModelGraph optimized = testing::compile_train(kSpec).step;
  EXPECT_EQ(count_op(optimized, ModelOp::Dense, true), 1);
  EXPECT_EQ(count_op(optimized, ModelOp::Conv2d, true), 1);
}

TEST(StepPasses, ChessNetFusesEveryReluButTheLast) {
  TrainProgram t = testing::compile_train(
      R"(source s = tfrecord("x.tfrecord") { board: f32[8, 8, 24], flags: f32[10], score: f32[1] }
pipeline data = s | batch(8, drop_remainder = true)
model chess_net(board: f32[8, 8, 24], flags: f32[10]) -> f32[1] {
  x = board | conv2d(64, 3, padding = same) | relu | conv2d(64, 3, padding = same) | relu
  x = concat([flatten(x), flags])
  x | dense(256) | relu | dense(1) | tanh
}
train t = { data = data, model = chess_net(board, flags), loss = mse(score), optimizer = adam(), steps = 1 }
)");
  EXPECT_EQ(count_op(t.step, ModelOp::Conv2d, true), 2);
  EXPECT_EQ(count_op(t.step, ModelOp::Dense, true), 1);
  EXPECT_EQ(count_relu_nodes(t.step), 0);
  // The served forward pass (no backward nodes read the pre-activations) fuses them the same way.
  EXPECT_EQ(count_op(t.inference, ModelOp::Conv2d, true), 2);
  EXPECT_EQ(count_op(t.inference, ModelOp::Dense, true), 1);
  EXPECT_EQ(count_relu_nodes(t.inference), 0);
  EXPECT_TRUE(verify_model_graph(t.inference).empty());
}

TEST(StepPasses, PassesRunInOrderAndVerify) {
  ModelGraph g = testing::compile_train(kSpec).step;
  std::vector<std::string> report = run_step_passes(g);
  ASSERT_EQ(report.size(), step_passes().size());
  EXPECT_EQ(report[0], "fuse_activation: 0 rewrites");  // already run by compile
}

// `pipec run` trains on the fast executor; -O0 and --executor reference pick the reference.
TEST(StepPasses, ExecutorChoiceOnTheCommandLine) {
  testing::ScratchDir d;
  testing::write_file(d / "fit.pipe", R"(pipeline data = range(256)
  | map(r => {
      x = random_uniform([8], -1.0, 1.0, seed = 1)
      { x, y: [sum(x)] }
    })
  | batch(32, drop_remainder = true)
model net(x: f32[8]) -> f32[1] { x | dense(16) | relu | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = adam(), steps = 4 }
)");
  auto fast = testing::run_pipec({"run", (d / "fit.pipe").string()});
  ASSERT_EQ(fast.exit_code, 0) << fast.err;
  EXPECT_NE(fast.err.find("executor    fast ("), std::string::npos) << fast.err;
  for (std::vector<std::string> flags :
       {std::vector<std::string>{"-O0"}, std::vector<std::string>{"--executor", "reference"}}) {
    std::vector<std::string> args = {"run", (d / "fit.pipe").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    auto ref = testing::run_pipec(args);
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    EXPECT_NE(ref.err.find("executor    reference (-O0"), std::string::npos) << ref.err;
  }
  // OpenMP's idle threads sleep under `pipec run` unless the environment says otherwise.
  const char* saved = std::getenv("OMP_WAIT_POLICY");
  std::string saved_value = saved ? saved : "";
  unsetenv("OMP_WAIT_POLICY");
  auto passive = testing::run_pipec({"run", (d / "fit.pipe").string()});
  EXPECT_NE(passive.err.find("OpenMP waits passive;"), std::string::npos) << passive.err;
  setenv("OMP_WAIT_POLICY", "active", 1);
  auto active = testing::run_pipec({"run", (d / "fit.pipe").string()});
  EXPECT_NE(active.err.find("OpenMP waits active;"), std::string::npos) << active.err;
  if (saved) setenv("OMP_WAIT_POLICY", saved_value.c_str(), 1);
  else unsetenv("OMP_WAIT_POLICY");
  auto bad = testing::run_pipec({"run", (d / "fit.pipe").string(), "--executor", "gpu"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
}  // namespace pipec

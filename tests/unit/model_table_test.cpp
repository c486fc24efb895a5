// The model IR's table (runtime/model/model_ops.def) against the layer builtins the checker accepts:
// every layer a model body may call lowers through a row of the table (a node kind of its own or an
// element-wise expr node), and every layer row is a builtin, so the checker, the model lowering and the
// table cannot drift apart.
#include <gtest/gtest.h>

#include <set>

#include "compiler/sema/builtins.h"
#include "runtime/model/model_graph.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

std::set<std::string> layer_builtins() {
  std::set<std::string> out;
  for (const Builtin& b : all_builtins())
    if (b.kind == BuiltinKind::Layer) out.insert(b.name);
  return out;
}

TEST(ModelTable, EveryLayerBuiltinLowersThroughTheTable) {
  for (const std::string& name : layer_builtins()) {
    std::optional<LayerLowering> how = layer_lowering(name);
    ASSERT_TRUE(how.has_value()) << "layer " << name << " has no row in model_ops.def";
    EXPECT_NE(how->node.has_value(), how->expr.has_value()) << name;
    if (how->node) {
      EXPECT_EQ(model_op_info(*how->node).category, OpCategory::Forward) << name;
      EXPECT_NE(*how->node, ModelOp::Expr) << name;
    }
  }
}

TEST(ModelTable, EveryLayerRowIsABuiltin) {
  const std::set<std::string> builtins = layer_builtins();
  for (const ModelOpInfo& op : all_model_ops())
    if (op.category == OpCategory::Forward && op.op != ModelOp::Expr)
      EXPECT_TRUE(builtins.count(op.name)) << op.name << " is a Forward kind no layer builtin lowers to";
  EXPECT_FALSE(layer_lowering("expr").has_value());
  EXPECT_FALSE(layer_lowering("conv2d_backward_input").has_value());
  EXPECT_FALSE(layer_lowering("no_such_layer").has_value());
}

// Layers with weights name them after Keras' prefix for their kind; each prefix is one kind's.
TEST(ModelTable, KerasPrefixesNameTheWeights) {
  std::set<std::string> seen;
  for (const ModelOpInfo& op : all_model_ops()) {
    std::string keras = op.keras;
    if (keras.empty()) continue;
    EXPECT_EQ(op.category, OpCategory::Forward) << op.name;
    EXPECT_TRUE(seen.insert(keras).second) << keras;
  }
  TrainProgram t = testing::compile_train(R"(source s = tfrecord("unused.tfrecord") { x: f32[6, 6, 2], y: f32[2] }
pipeline data = s | batch(4)
model net(x: f32[6, 6, 2]) -> f32[2] { x | conv2d(3, 3) | batch_norm | relu | conv2d(3, 3) | flatten | dense(2) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd() }
)");
  std::vector<std::string> names;
  for (int p : t.step.params) names.push_back(t.step.values[p].name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv2d/kernel", "conv2d/bias", "batch_normalization/gamma",
                                              "batch_normalization/beta", "conv2d_1/kernel", "conv2d_1/bias", "dense/kernel",
                                              "dense/bias"}));
}

}  // namespace
}  // namespace pipec

// The model IR's table (runtime/model/model_ops.def) against the builtins the checker accepts: every
// layer a model body may call lowers through a row of the table (a node kind of its own or an
// element-wise expr node), and every layer row is a builtin; every loss and optimizer builtin is a LOSS
// or OPTIMIZER row and every such row a builtin. So the checker, the lowering, the executors and the
// table cannot drift apart.
#include <gtest/gtest.h>

#include <set>
#include <variant>

#include <fmt/format.h>

#include "compiler/sema/builtins.h"
#include "compiler/sema/name_rules.h"
#include "compiler/train/layer_parts.h"
#include "runtime/model/model_graph.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

std::set<std::string> builtins_of(BuiltinKind kind) {
  std::set<std::string> out;
  for (const Builtin& b : all_builtins())
    if (b.kind == kind) out.insert(b.name);
  return out;
}

std::set<std::string> layer_builtins() { return builtins_of(BuiltinKind::Layer); }

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
    if (op.category == OpCategory::Forward && op.op != ModelOp::Expr) {
      EXPECT_TRUE(builtins.count(op.name)) << op.name << " is a Forward kind no layer builtin lowers to";
    }
  EXPECT_FALSE(layer_lowering("expr").has_value());
  EXPECT_FALSE(layer_lowering("conv2d_backward_input").has_value());
  EXPECT_FALSE(layer_lowering("no_such_layer").has_value());
}

// compiler/sema/layers.def's rows are the layer builtins (concat, the op seen as a layer, aside), and each
// row that lowers to a node kind of its own has a parts rule.
TEST(ModelTable, LayerRowsAreTheLayerBuiltins) {
  std::set<std::string> rows;
#define LAYER(builtin, shape_rule, parts_rule, arguments, doc) EXPECT_TRUE(rows.insert(#builtin).second) << #builtin;
#include "compiler/sema/layers.def"
#undef LAYER
  std::set<std::string> builtins = layer_builtins();
  builtins.erase("concat");
  EXPECT_EQ(rows, builtins);
  for (const std::string& name : rows) {
    std::optional<LayerLowering> how = layer_lowering(name);
    ASSERT_TRUE(how.has_value()) << name;
    if (how->node) {
      EXPECT_NE(layer_parts_rule(name), nullptr) << name;
    }
  }
  EXPECT_EQ(layer_parts_rule("no_such_layer"), nullptr);
}

// A node layer's arguments fill its attribute struct by name: every argument after x is a field of the
// struct its kind holds (model_ops.def), and every field is an argument's or one that lowering or a pass
// sets (dropout's random stream, a fused activation, the evaluation graph's inference flag).
TEST(ModelTable, NodeLayerArgumentsAreTheirAttributes) {
  const std::set<std::string> not_arguments = {"stream", "activation", "inference"};
  int checked = 0;
  for (const Builtin& b : all_builtins()) {
    if (b.kind != BuiltinKind::Layer) continue;
    std::optional<LayerLowering> how = layer_lowering(b.name);
    if (!how || !how->node) continue;
    std::set<std::string> arguments, fields;
    for (const ParamSpec& p : b.params)
      if (p.name != "x") arguments.insert(p.name);
    std::visit([&](const auto& a) { for_each_attr(a, [&](const char* name, const auto&) { fields.insert(name); }); },
               default_attrs(*how->node));
    for (const std::string& a : arguments)
      EXPECT_TRUE(fields.count(a)) << b.name << "'s argument " << a << " is no field of "
                                   << attrs_name(default_attrs(*how->node));
    for (const std::string& f : fields)
      EXPECT_TRUE(arguments.count(f) || not_arguments.count(f))
          << attrs_name(default_attrs(*how->node)) << "'s field " << f << " is no argument of " << b.name;
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

// The arguments reach the attributes: given values, defaults, a default naming another argument (a pool's
// strides are its size) and an axis counted from the end.
TEST(ModelTable, LayerArgumentsFillTheNodesAttributes) {
  TrainProgram t = testing::compile_train(R"(source s = tfrecord("unused.tfrecord") { x: f32[8, 8, 2], y: f32[3] }
pipeline data = s | batch(4)
model net(x: f32[8, 8, 2]) -> f32[3] {
  x | conv2d(4, [3, 1], padding = same, dilation = 2) | max_pool2d([2, 1]) | leaky_relu | dropout(0.25)
    | global_avg_pool | dense(3) | softmax(axis = -1)
}
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd() }
)");
  int seen = 0;
  for (const GraphNode& n : t.step.nodes) {
    if (n.op == ModelOp::Conv2d) {
      const Conv2dAttrs& a = n.attrs_as<Conv2dAttrs>();
      EXPECT_EQ(a.filters, 4);
      EXPECT_EQ(a.kernel, (Pair{3, 1}));
      EXPECT_EQ(a.strides, (Pair{1, 1}));
      EXPECT_EQ(a.padding, Padding::Same);
      EXPECT_EQ(a.dilation, (Pair{2, 2}));
      ++seen;
    } else if (n.op == ModelOp::MaxPool2d) {
      EXPECT_EQ(n.attrs_as<Pool2dAttrs>().strides, (Pair{2, 1}));
      EXPECT_EQ(n.attrs_as<Pool2dAttrs>().padding, Padding::Valid);
      ++seen;
    } else if (n.op == ModelOp::LeakyRelu) {
      EXPECT_DOUBLE_EQ(n.attrs_as<LeakyReluAttrs>().alpha, 0.2);
      ++seen;
    } else if (n.op == ModelOp::Dropout) {
      EXPECT_DOUBLE_EQ(n.attrs_as<DropoutAttrs>().rate, 0.25);
      ++seen;
    } else if (n.op == ModelOp::Softmax) {
      EXPECT_EQ(n.attrs_as<SoftmaxAttrs>().axis, 0);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 5);
}

TEST(ModelTable, LossBuiltinsAreTheLossRows) {
  std::set<std::string> rows;
  for (LossKind kind : all_loss_kinds()) {
    const std::string name = loss_kind_name(kind);
    EXPECT_TRUE(rows.insert(name).second) << name << " is two LOSS rows";
    EXPECT_EQ(loss_kind_from_name(name), kind) << name;
  }
  EXPECT_EQ(rows, builtins_of(BuiltinKind::Loss));
  EXPECT_FALSE(loss_kind_from_name("adam").has_value());
  EXPECT_FALSE(loss_kind_from_name("no_such_loss").has_value());
}

TEST(ModelTable, OptimizerBuiltinsAreTheOptimizerRows) {
  std::set<std::string> rows;
  for (OptimizerKind kind : all_optimizer_kinds()) {
    const std::string name = optimizer_kind_name(kind);
    EXPECT_TRUE(rows.insert(name).second) << name << " is two OPTIMIZER rows";
    EXPECT_EQ(optimizer_kind_from_name(name), kind) << name;
  }
  EXPECT_EQ(rows, builtins_of(BuiltinKind::Optimizer));
  EXPECT_FALSE(optimizer_kind_from_name("mse").has_value());
  EXPECT_FALSE(optimizer_kind_from_name("no_such_optimizer").has_value());
}

TEST(ModelTable, StrategyBuiltinsAreTheStrategyRows) {
  std::set<std::string> rows;
  for (StrategyKind kind : all_strategy_kinds()) {
    const std::string name = strategy_kind_name(kind);
    EXPECT_TRUE(rows.insert(name).second) << name << " is two STRATEGY rows";
    EXPECT_EQ(strategy_kind_from_name(name), kind) << name;
  }
  EXPECT_EQ(rows, builtins_of(BuiltinKind::Strategy));
  EXPECT_FALSE(strategy_kind_from_name("adam").has_value());
  TrainProgram t = testing::compile_train(R"(source s = tfrecord("unused.tfrecord") { x: f32[4], y: f32[3] }
pipeline data = s | batch(2)
model net(x: f32[4]) -> f32[3] { x | dense(3) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), strategy = multi_worker() }
)");
  EXPECT_EQ(t.strategy, StrategyKind::MultiWorker);
}

TEST(ModelTable, MetricWordsAreTheMetricRows) {
  std::vector<std::string> rows;
  for (MetricKind kind : all_metric_kinds()) {
    rows.push_back(metric_kind_name(kind));
    EXPECT_EQ(metric_kind_from_name(rows.back()), kind) << rows.back();
  }
  EXPECT_EQ(rows, metric_words());
  EXPECT_EQ(std::set<std::string>(rows.begin(), rows.end()).size(), rows.size()) << "a metric is two METRIC rows";
  EXPECT_FALSE(metric_kind_from_name("cross_entropy").has_value());
  EXPECT_FALSE(metric_kind_from_name("acc").has_value());
}

// Every loss and optimizer of the table lowers to a training step whose loss and optimizer_step nodes
// carry the row's name as their `kind`, and the printed step names them.
TEST(ModelTable, EveryLossAndOptimizerRowLowersToItsNode) {
  for (LossKind loss : all_loss_kinds())
    for (OptimizerKind optimizer : all_optimizer_kinds()) {
      const std::string loss_name = loss_kind_name(loss), optimizer_name = optimizer_kind_name(optimizer);
      TrainProgram t =
          testing::compile_train(fmt::format(R"(source s = tfrecord("unused.tfrecord") {{ x: f32[4], y: f32[3] }}
pipeline data = s | batch(2)
model net(x: f32[4]) -> f32[3] {{ x | dense(3) | softmax }}
train t = {{ data = data, model = net(x), loss = {}(y), optimizer = {}() }}
)",
                                             loss_name, optimizer_name));
      int losses = 0, steps = 0;
      for (const GraphNode& n : t.step.nodes) {
        if (n.op == ModelOp::Loss) {
          ++losses;
          EXPECT_EQ(n.attrs_as<LossAttrs>().kind, loss);
        }
        if (n.op == ModelOp::OptimizerStep) {
          ++steps;
          EXPECT_EQ(n.attrs_as<OptimizerAttrs>().kind, optimizer);
        }
      }
      EXPECT_EQ(losses, 1) << loss_name;
      EXPECT_EQ(steps, 1) << optimizer_name;
      EXPECT_EQ(t.loss_text, loss_name + "(y)");
      EXPECT_EQ(t.optimizer_text.substr(0, optimizer_name.size() + 1), optimizer_name + "(");
    }
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
                                             "batch_normalization/beta", "conv2d_1/kernel", "conv2d_1/bias",
                                             "dense/kernel", "dense/bias"}));
}

}  // namespace
}  // namespace pipec

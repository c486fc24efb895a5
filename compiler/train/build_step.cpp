#include "compiler/train/build_step.h"

#include <fmt/format.h>

#include "compiler/train/gradients.h"

namespace pipec {

namespace {

// The node that computes `value`, or null for inputs and parameters.
const GraphNode* producer(const ModelGraph& g, int value) {
  for (const GraphNode& n : g.nodes)
    for (int o : n.outputs)
      if (o == value) return &n;
  return nullptr;
}

// An expr node computing exactly `op` of its one input.
bool is_single(const GraphNode& n, OpKind op) {
  if (n.op != ModelOp::Expr || !n.fn || n.inputs.size() != 1) return false;
  int ops = 0;
  bool found = false;
  for (const Instr& i : n.fn->body) {
    if (op_has(i.op, OpFlag::Input)) continue;
    ++ops;
    found = found || i.op == op;
  }
  return ops == 1 && found;
}

}  // namespace

void add_loss(ModelGraph& g, const LossSpec& loss) {
  // Keras computes cross_entropy after a softmax, and binary_cross_entropy after a sigmoid, from the
  // logits behind them: log-softmax and log-sigmoid stay finite where the probabilities round to 0 or 1.
  int prediction = g.output;
  bool from_logits = false;
  if (const GraphNode* p = producer(g, g.output)) {
    if (loss.kind == LossKind::CrossEntropy && p->op == ModelOp::Softmax &&
        p->attrs_as<SoftmaxAttrs>().axis == static_cast<int64_t>(g.values[p->inputs[0]].shape.size()) - 1) {
      prediction = p->inputs[0];
      from_logits = true;
    } else if (loss.kind == LossKind::BinaryCrossEntropy && is_single(*p, OpKind::Sigmoid) &&
               g.values[p->inputs[0]].dtype == DType::F32) {
      prediction = p->inputs[0];
      from_logits = true;
    }
  }
  if (g.values[prediction].dtype != DType::F32) {
    // The loss computes in f32.
    const GraphValue& v = g.values[prediction];
    Type in = Type::tensor(v.dtype, v.shape), out = Type::tensor(DType::F32, v.shape);
    auto fn = std::make_shared<ExprFunction>();
    fn->name = fmt::format("expr@{}", g.nodes.size());
    int p = fn->add(Instr{OpKind::Param, {}, {{"field", Value::make_string("prediction")}}, in, {}});
    fn->results = {{"y", fn->add(Instr{OpKind::Cast, {p}, {{"dtype", Value::make_symbol("f32")}}, out, {}})}};
    GraphValue c;
    c.shape = v.shape;
    int cast = g.add_value(c);
    GraphNode n;
    n.op = ModelOp::Expr;
    n.inputs = {prediction};
    n.outputs = {cast};
    n.fn = fn;
    g.add_node(std::move(n));
    prediction = cast;
  }
  GraphValue target;
  target.name = loss.target_field;
  target.shape = loss.target_shape;
  target.role = ValueRole::Target;
  g.target = g.add_value(target);
  g.target_field = loss.target_field;
  GraphValue l;
  l.name = "loss";
  l.batched = false;
  g.loss = g.add_value(l);
  GraphNode ln;
  ln.op = ModelOp::Loss;
  ln.inputs = {prediction, g.target};
  ln.outputs = {g.loss};
  LossAttrs a{.kind = loss.kind, .from_logits = from_logits};
  if (loss.kind == LossKind::CrossEntropy) a.sparse = loss.sparse;
  if (loss.kind == LossKind::Huber) a.delta = 1.0;
  ln.attrs = a;
  g.add_node(std::move(ln));
}

void set_inference_mode(ModelGraph& g) {
  for (GraphNode& n : g.nodes) {
    if (n.op == ModelOp::BatchNorm) n.attrs_as<BatchNormAttrs>().inference = Flag{true};
    if (n.op == ModelOp::Dropout) n.attrs_as<DropoutAttrs>().inference = Flag{true};
  }
}

void build_train_step(ModelGraph& g, const LossSpec& loss, const OptimizerSpec& optimizer) {
  add_loss(g, loss);
  append_gradients(g, g.loss);

  // batch_norm's moving statistics follow the batch statistics of the step.
  const size_t n = g.nodes.size();
  for (size_t i = 0; i < n; ++i) {
    const GraphNode bn = g.nodes[i];
    if (bn.op != ModelOp::BatchNorm) continue;
    for (int k = 0; k < 2; ++k) {
      GraphNode u;
      u.op = ModelOp::MovingAverage;
      u.inputs = {bn.inputs[3 + k], bn.outputs[1 + k]};
      u.attrs = MovingAverageAttrs{.momentum = bn.attrs_as<BatchNormAttrs>().momentum};
      u.layer = bn.layer;
      u.loc = bn.loc;
      g.add_node(std::move(u));
    }
  }
  GraphNode opt;
  opt.op = ModelOp::OptimizerStep;
  opt.attrs = optimizer.attrs;
  g.add_node(std::move(opt));
}

}  // namespace pipec

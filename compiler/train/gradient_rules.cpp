// One gradient rule per forward node kind of model_ops.def, in table order. Each says which backward
// nodes of its layer to append for the inputs that need a gradient; what each reads and which attributes
// it holds are model_ops.def's (GradientContext::emit). Expr nodes get the VJP of their function
// (expr_gradients.cpp).
#include <algorithm>

#include <fmt/format.h>

#include "compiler/train/expr_gradients.h"
#include "compiler/train/gradients.h"

namespace pipec {

int GradientContext::gradient_value(int of) {
  GraphValue v = g.values.at(of);
  GraphValue d;
  d.dtype = v.dtype;
  d.shape = v.shape;
  d.batched = v.batched;
  d.role = ValueRole::Gradient;
  if (v.role == ValueRole::Param) d.grad_of = of;
  d.name = v.name.empty() ? "" : "d(" + v.name + ")";
  return g.add_value(d);
}

int GradientContext::resolve(ForwardValue v) const {
  switch (v.source) {
    case ForwardValue::Input: return node.inputs.at(static_cast<size_t>(v.index));
    case ForwardValue::Output: return node.outputs.at(static_cast<size_t>(v.index));
    case ForwardValue::Adjoint: return dy.at(static_cast<size_t>(v.index));
  }
  return -1;
}

void GradientContext::emit(ModelOp op, std::vector<int> outputs) {
  const ModelOpInfo& info = model_op_info(op);
  if (std::find(info.forward.begin(), info.forward.end(), node.op) == info.forward.end())
    throw std::logic_error(fmt::format("gradient rule of {}: {} is no backward kind of it (model_ops.def)",
                                       model_op_name(node.op), info.name));
  GraphNode n;
  n.op = op;
  for (ForwardValue v : info.reads) {
    n.inputs.push_back(resolve(v));
    if (n.inputs.back() < 0)
      throw std::logic_error(
          fmt::format("gradient rule of {}: {} reads an adjoint nothing gives", model_op_name(node.op), info.name));
  }
  n.outputs = std::move(outputs);
  // The forward node's attributes when the kind shares its struct (conv2d's window, batch_norm's epsilon);
  // none for a kind without attributes (bias_backward).
  if (info.attrs == node.attrs.index()) n.attrs = node.attrs;
  else if (info.attrs != attrs_index<NoAttrs>())
    throw std::logic_error(fmt::format("gradient rule of {}: {} holds {}, which the forward node does not",
                                       model_op_name(node.op), info.name, attrs_name(info.attrs)));
  n.layer = node.layer;
  n.loc = node.loc;
  n.forward = node_index;
  g.add_node(std::move(n));
}

namespace {

// A layer with a kernel and a bias (conv2d, conv2d_transpose, dense): input, kernel and bias gradients.
void kernel_bias_rule(GradientContext& c, ModelOp backward_input, ModelOp backward_kernel) {
  int x = c.node.inputs[0], kernel = c.node.inputs[1], bias = c.node.inputs[2];
  if (c.wants[0]) c.emit(backward_input, {c.grads[0] = c.gradient_value(x)});
  if (c.wants[1]) c.emit(backward_kernel, {c.grads[1] = c.gradient_value(kernel)});
  if (c.wants[2]) c.emit(ModelOp::BiasBackward, {c.grads[2] = c.gradient_value(bias)});
}

// A layer whose one backward node gives its input's gradient (pools, upsampling, activations, softmax,
// dropout, the loss): what that node reads is model_ops.def's.
void input_gradient_rule(GradientContext& c, ModelOp backward) {
  if (c.wants[0]) c.emit(backward, {c.grads[0] = c.gradient_value(c.node.inputs[0])});
}

// batch_norm and layer_norm: dx, dgamma, dbeta in one node from x, dy, gamma and the saved statistics.
void norm_rule(GradientContext& c, ModelOp backward) {
  int x = c.node.inputs[0], gamma = c.node.inputs[1], beta = c.node.inputs[2];
  std::vector<int> outs = {c.gradient_value(x), c.gradient_value(gamma), c.gradient_value(beta)};
  c.emit(backward, outs);
  for (int k = 0; k < 3; ++k)
    if (c.wants[k]) c.grads[k] = outs[k];
}

void expr_rule(GradientContext& c) {
  std::vector<bool> has_dy;
  std::vector<int> inputs = c.node.inputs;
  for (int d : c.dy) {
    has_dy.push_back(d >= 0);
    if (d >= 0) inputs.push_back(d);
  }
  std::shared_ptr<ExprFunction> vjp;
  try {
    vjp = build_vjp(*c.node.fn, c.wants, has_dy);
  } catch (const NotDifferentiable& e) {
    const Instr& in = c.node.fn->body.at(e.instr);
    throw GradientError(c.node_index, std::string(op_name(e.op)),
                        in.loc.valid() ? fmt::format("{} (at {}:{})", e.what(), in.loc.line, in.loc.col) : e.what());
  }
  vjp->name = fmt::format("expr@{}'", c.node_index);
  std::vector<int> outs;
  for (size_t k = 0; k < c.wants.size(); ++k)
    if (c.wants[k]) outs.push_back(c.grads[k] = c.gradient_value(c.node.inputs[k]));
  GraphNode n;
  n.op = ModelOp::Expr;
  n.inputs = inputs;
  n.outputs = outs;
  n.fn = vjp;
  n.phase = OpCategory::Backward;
  n.layer = c.node.layer;
  n.loc = c.node.loc;
  n.forward = c.node_index;
  c.g.add_node(std::move(n));
}

void rule_expr(GradientContext& c) { expr_rule(c); }
void rule_conv2d(GradientContext& c) {
  kernel_bias_rule(c, ModelOp::Conv2dBackwardInput, ModelOp::Conv2dBackwardKernel);
}
void rule_conv2d_transpose(GradientContext& c) {
  kernel_bias_rule(c, ModelOp::Conv2dTransposeBackwardInput, ModelOp::Conv2dTransposeBackwardKernel);
}
void rule_dense(GradientContext& c) { kernel_bias_rule(c, ModelOp::DenseBackwardInput, ModelOp::DenseBackwardKernel); }
void rule_max_pool2d(GradientContext& c) { input_gradient_rule(c, ModelOp::MaxPool2dBackward); }
void rule_avg_pool2d(GradientContext& c) { input_gradient_rule(c, ModelOp::AvgPool2dBackward); }
void rule_global_avg_pool(GradientContext& c) { input_gradient_rule(c, ModelOp::GlobalAvgPoolBackward); }
void rule_global_max_pool(GradientContext& c) { input_gradient_rule(c, ModelOp::GlobalMaxPoolBackward); }
void rule_upsample2d(GradientContext& c) { input_gradient_rule(c, ModelOp::Upsample2dBackward); }
void rule_leaky_relu(GradientContext& c) { input_gradient_rule(c, ModelOp::LeakyReluBackward); }
void rule_gelu(GradientContext& c) { input_gradient_rule(c, ModelOp::GeluBackward); }
// From the output: dx = y * (dy - sum(dy * y)).
void rule_softmax(GradientContext& c) { input_gradient_rule(c, ModelOp::SoftmaxBackward); }
void rule_batch_norm(GradientContext& c) { norm_rule(c, ModelOp::BatchNormBackward); }
void rule_layer_norm(GradientContext& c) { norm_rule(c, ModelOp::LayerNormBackward); }
void rule_dropout(GradientContext& c) { input_gradient_rule(c, ModelOp::DropoutBackward); }
// Only the table gets a gradient (the rows of dy added into the rows of their ids): integer ids have none.
void rule_embedding(GradientContext& c) {
  if (c.wants[1]) c.emit(ModelOp::EmbeddingBackward, {c.grads[1] = c.gradient_value(c.node.inputs[1])});
}
// The loss is where the sweep starts: its rule needs no adjoint (d loss / d loss = 1).
void rule_loss(GradientContext& c) { input_gradient_rule(c, ModelOp::LossBackward); }

}  // namespace

GradientRule gradient_rule(ModelOp op) {
  switch (op) {
    case ModelOp::Expr: return rule_expr;
    case ModelOp::Conv2d: return rule_conv2d;
    case ModelOp::Conv2dTranspose: return rule_conv2d_transpose;
    case ModelOp::Dense: return rule_dense;
    case ModelOp::MaxPool2d: return rule_max_pool2d;
    case ModelOp::AvgPool2d: return rule_avg_pool2d;
    case ModelOp::GlobalAvgPool: return rule_global_avg_pool;
    case ModelOp::GlobalMaxPool: return rule_global_max_pool;
    case ModelOp::Upsample2d: return rule_upsample2d;
    case ModelOp::LeakyRelu: return rule_leaky_relu;
    case ModelOp::Gelu: return rule_gelu;
    case ModelOp::Softmax: return rule_softmax;
    case ModelOp::BatchNorm: return rule_batch_norm;
    case ModelOp::LayerNorm: return rule_layer_norm;
    case ModelOp::Dropout: return rule_dropout;
    case ModelOp::Embedding: return rule_embedding;
    case ModelOp::Loss: return rule_loss;
    default: return nullptr;  // backward and update kinds are not differentiated
  }
}

}  // namespace pipec

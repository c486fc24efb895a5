// FLOP counts per node, for `pipec explain` and the run summary. A multiply-add counts two; other
// element-wise work one per element (a few for the ops that make several passes); backward nodes count
// what their loops compute. The counts describe the math, not any executor's speed.
#include "runtime/model/model_graph.h"

namespace pipec {

namespace {

int64_t per_example(const ModelGraph& g, int v) { return g.values.at(v).elements_per_example(); }

// Rows of a dense layer's input: every dimension but the last (per example).
int64_t leading(const Shape& s) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) n *= s[i];
  return n;
}

}  // namespace

int64_t node_flops(const ModelGraph& g, const GraphNode& n, int64_t rows) {
  auto in = [&](size_t i) { return per_example(g, n.inputs.at(i)); };
  auto out = [&](size_t i) { return per_example(g, n.outputs.at(i)); };
  auto kernel_shape = [&](int value) -> const Shape& { return g.values.at(value).shape; };
  int64_t per = 0;  // per example
  switch (n.op) {
    case ModelOp::Expr: {
      if (!n.fn) return 0;
      // Inputs, constants, data movement (reshapes, joins, slices) and casts are not counted.
      for (const Instr& i : n.fn->body) {
        bool moves = op_has(i.op, OpFlag::Input | OpFlag::Constant | OpFlag::Structural) || i.op == OpKind::Cast;
        if (!moves && i.type.fully_known()) per += i.type.num_elements();
      }
      break;
    }
    case ModelOp::Conv2d: {  // x, kernel [kh, kw, in, out]
      const Shape& k = kernel_shape(n.inputs[1]);
      per = out(0) * (2 * k[0] * k[1] * k[2] + 1);
      break;
    }
    case ModelOp::Conv2dBackwardInput: {  // dy, kernel: the same multiply-adds as the forward
      const Shape& k = kernel_shape(n.inputs[1]);
      per = per_example(g, n.inputs[0]) * 2 * k[0] * k[1] * k[2];
      break;
    }
    case ModelOp::Conv2dBackwardKernel: {  // x, dy
      const Shape& k = g.values.at(n.outputs[0]).shape;
      per = per_example(g, n.inputs[1]) * 2 * k[0] * k[1] * k[2];
      break;
    }
    case ModelOp::Conv2dTranspose: {  // each input pixel scatters a kh x kw x out patch
      const Shape& k = kernel_shape(n.inputs[1]);
      per = in(0) * 2 * k[0] * k[1] * k[2] + out(0);
      break;
    }
    case ModelOp::Conv2dTransposeBackwardInput: {
      const Shape& k = kernel_shape(n.inputs[1]);
      per = out(0) * 2 * k[0] * k[1] * k[2];
      break;
    }
    case ModelOp::Conv2dTransposeBackwardKernel: {
      const Shape& k = g.values.at(n.outputs[0]).shape;
      per = in(0) * 2 * k[0] * k[1] * k[2];
      break;
    }
    case ModelOp::Dense: {
      const Shape& k = kernel_shape(n.inputs[1]);
      per = leading(g.values.at(n.inputs[0]).shape) * (2 * k[0] * k[1] + k[1]);
      break;
    }
    case ModelOp::DenseBackwardInput: {
      const Shape& k = kernel_shape(n.inputs[1]);
      per = leading(g.values.at(n.inputs[0]).shape) * 2 * k[0] * k[1];
      break;
    }
    case ModelOp::DenseBackwardKernel: {
      const Shape& k = g.values.at(n.outputs[0]).shape;
      per = leading(g.values.at(n.inputs[1]).shape) * 2 * k[0] * k[1];
      break;
    }
    case ModelOp::BiasBackward: per = in(0); break;
    case ModelOp::MaxPool2d:
    case ModelOp::AvgPool2d: {
      std::vector<int64_t> size = n.attr_ints("size");
      per = out(0) * size[0] * size[1];
      break;
    }
    case ModelOp::MaxPool2dBackward:
    case ModelOp::AvgPool2dBackward: {
      std::vector<int64_t> size = n.attr_ints("size");
      per = per_example(g, n.inputs.back()) * size[0] * size[1];
      break;
    }
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalMaxPool: per = in(0); break;
    case ModelOp::GlobalAvgPoolBackward:
    case ModelOp::GlobalMaxPoolBackward: per = out(0); break;
    case ModelOp::Upsample2d:
    case ModelOp::Upsample2dBackward:
      per = n.attr_symbol("method") == "bilinear" ? 8 * std::max(in(0), out(0)) : out(0);
      break;
    case ModelOp::LeakyRelu:
    case ModelOp::LeakyReluBackward:
    case ModelOp::DropoutBackward: per = out(0); break;
    case ModelOp::Dropout: per = 2 * in(0); break;
    case ModelOp::Gelu: per = 8 * in(0); break;
    case ModelOp::GeluBackward: per = 12 * out(0); break;
    case ModelOp::Softmax: per = 4 * in(0); break;
    case ModelOp::SoftmaxBackward: per = 4 * out(0); break;
    case ModelOp::BatchNorm:
    case ModelOp::LayerNorm: per = 6 * in(0); break;
    case ModelOp::BatchNormBackward:
    case ModelOp::LayerNormBackward: per = 10 * out(0); break;
    case ModelOp::Loss:
    case ModelOp::LossBackward: per = 4 * per_example(g, n.inputs[0]); break;
    case ModelOp::MovingAverage: return 3 * per_example(g, n.inputs[0]);
    case ModelOp::OptimizerStep: return 12 * g.param_elements();
  }
  // A fused activation (compiler/train/passes/fuse_activation.cpp) counts as the relu node it replaced.
  if (n.attr("activation")) per += out(0);
  return per * rows;
}

}  // namespace pipec

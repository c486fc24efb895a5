// FLOP counts per node, for `pipec explain` and the run summary: each kind's rule (model_ops.def's
// `flops` column, the rules of model_flops.h) for a batch.
#include "runtime/model/model_flops.h"

#include <algorithm>

namespace pipec {

namespace flops_rules {

namespace {

// Rows of a dense layer's input: every dimension but the last (per example).
int64_t leading(const Shape& s) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) n *= s[i];
  return n;
}

const Shape& shape(const ModelGraph& g, int value) { return g.values.at(value).shape; }

// The multiply-adds of a window: kh * kw * the kernel's third axis (conv2d's input channels,
// conv2d_transpose's output channels).
int64_t window(const Shape& kernel) { return kernel[0] * kernel[1] * kernel[2]; }

}  // namespace

int64_t none(const ModelGraph&, const GraphNode&) { return 0; }

int64_t expr(const ModelGraph&, const GraphNode& n) {
  if (!n.fn) return 0;
  int64_t per = 0;
  // Inputs, constants, data movement (reshapes, joins, slices) and casts are not counted.
  for (const Instr& i : n.fn->body) {
    bool moves = op_has(i.op, OpFlag::Input | OpFlag::Constant | OpFlag::Structural) || i.op == OpKind::Cast;
    if (!moves && i.type.fully_known()) per += i.type.num_elements();
  }
  return per;
}

int64_t conv2d(const ModelGraph& g, const GraphNode& n) {  // x, kernel [kh, kw, in, out]
  return output_elements(g, n, 0) * (2 * window(shape(g, n.inputs[1])) + 1);
}

int64_t conv2d_backward_input(const ModelGraph& g, const GraphNode& n) {  // dy, kernel: the forward's multiply-adds
  return input_elements(g, n, 0) * 2 * window(shape(g, n.inputs[1]));
}

int64_t conv2d_backward_kernel(const ModelGraph& g, const GraphNode& n) {  // x, dy
  return input_elements(g, n, 1) * 2 * window(shape(g, n.outputs[0]));
}

int64_t conv2d_transpose(const ModelGraph& g, const GraphNode& n) {  // each input pixel scatters a kh x kw x out patch
  return input_elements(g, n, 0) * 2 * window(shape(g, n.inputs[1])) + output_elements(g, n, 0);
}

int64_t conv2d_transpose_backward_input(const ModelGraph& g, const GraphNode& n) {
  return output_elements(g, n, 0) * 2 * window(shape(g, n.inputs[1]));
}

int64_t conv2d_transpose_backward_kernel(const ModelGraph& g, const GraphNode& n) {
  return input_elements(g, n, 0) * 2 * window(shape(g, n.outputs[0]));
}

int64_t dense(const ModelGraph& g, const GraphNode& n) {
  const Shape& k = shape(g, n.inputs[1]);
  return leading(shape(g, n.inputs[0])) * (2 * k[0] * k[1] + k[1]);
}

int64_t dense_backward_input(const ModelGraph& g, const GraphNode& n) {
  const Shape& k = shape(g, n.inputs[1]);
  return leading(shape(g, n.inputs[0])) * 2 * k[0] * k[1];
}

int64_t dense_backward_kernel(const ModelGraph& g, const GraphNode& n) {
  const Shape& k = shape(g, n.outputs[0]);
  return leading(shape(g, n.inputs[1])) * 2 * k[0] * k[1];
}

int64_t pool2d(const ModelGraph& g, const GraphNode& n) {
  const Pair& size = n.attrs_as<Pool2dAttrs>().size;
  return output_elements(g, n, 0) * size[0] * size[1];
}

int64_t pool2d_backward(const ModelGraph& g, const GraphNode& n) {  // per element of dy, its last input
  const Pair& size = n.attrs_as<Pool2dAttrs>().size;
  return input_elements(g, n, n.inputs.size() - 1) * size[0] * size[1];
}

int64_t upsample2d(const ModelGraph& g, const GraphNode& n) {
  const int64_t in = input_elements(g, n, 0), out = output_elements(g, n, 0);
  return n.attrs_as<Upsample2dAttrs>().method == Interpolation::Bilinear ? 8 * std::max(in, out) : out;
}

int64_t embedding_backward(const ModelGraph& g, const GraphNode& n) { return input_elements(g, n, 1); }

int64_t optimizer_step(const ModelGraph& g, const GraphNode&) { return 12 * g.param_elements(); }

}  // namespace flops_rules

int64_t node_flops(const ModelGraph& g, const GraphNode& n, int64_t rows) {
  const ModelOpInfo& info = model_op_info(n.op);
  int64_t count = info.flops(g, n);
  // A fused activation (compiler/train/passes/fuse_activation.cpp) counts as the relu node it replaced.
  if (fused_activation(n.attrs)) count += flops_rules::output_elements(g, n, 0);
  return info.category == OpCategory::Update ? count : count * rows;
}

}  // namespace pipec

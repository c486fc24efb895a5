// fuse_activation: `conv2d | relu` (and conv2d_transpose, dense) becomes one node computing
// relu(conv(x, w) + b), the relu a post-op of the layer's kernel (oneDNN fuses it into the convolution's
// output loop), so the pre-activation tensor is never written.
//
// The gradient pass differentiated the relu as an expr node reading the pre-activation h and dy:
// dh = where(h > 0, dy, 0). Since relu(h) > 0 exactly where h > 0, the same function reads the layer's
// output y instead, so the rewrite is: the layer's output becomes the relu's, its `activation` attribute
// says relu, the relu node goes, and the backward expr reads y. Only when h has no other reader (else h
// must exist) and the backward expr is the relu's own (comparisons and selects only). A forward-only
// graph (the inference graph of a served model) has no backward expr: the relu alone reads h.
#include "compiler/train/passes/erase_nodes.h"
#include "compiler/train/passes/step_passes.h"

namespace pipec {

namespace {

bool single_relu(const GraphNode& n) {
  if (n.op != ModelOp::Expr || !n.fn || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
  int ops = 0;
  for (const Instr& i : n.fn->body) {
    if (op_has(i.op, OpFlag::Input)) continue;
    if (i.op != OpKind::Relu) return false;
    ++ops;
  }
  return ops == 1;
}

// The VJP of a relu: reads h and dy, compares and selects.
bool relu_vjp(const GraphNode& n, int h) {
  if (n.op != ModelOp::Expr || n.phase != OpCategory::Backward || !n.fn || n.inputs.size() != 2 || n.inputs[0] != h ||
      n.outputs.size() != 1)
    return false;
  for (const Instr& i : n.fn->body)
    if (!op_has(i.op, OpFlag::Input) && i.op != OpKind::Const && i.op != OpKind::Gt && i.op != OpKind::Where)
      return false;
  return true;
}

}  // namespace

int fuse_activation(ModelGraph& g) {
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs) readers[v].push_back(static_cast<int>(i));
  std::vector<bool> removed(g.nodes.size(), false);
  int rewrites = 0;
  for (size_t f = 0; f < g.nodes.size(); ++f) {
    GraphNode& layer = g.nodes[f];
    if (layer.op != ModelOp::Conv2d && layer.op != ModelOp::Conv2dTranspose && layer.op != ModelOp::Dense) continue;
    if (fused_activation(layer.attrs)) continue;
    const int h = layer.outputs[0];
    // h's readers: the relu and its VJP in a training step; the relu alone in a forward-only graph
    // (the inference graph a model library serves).
    const bool forward_only = readers[h].size() == 1;
    if (h == g.output || (readers[h].size() != 2 && !forward_only)) continue;
    int relu = -1, vjp = -1;
    for (int r : readers[h]) {
      if (single_relu(g.nodes[r])) relu = r;
      else if (relu_vjp(g.nodes[r], h)) vjp = r;
    }
    if (relu < 0 || (!forward_only && (vjp < 0 || g.nodes[vjp].layer != g.nodes[relu].layer))) continue;
    const int y = g.nodes[relu].outputs[0];
    layer.outputs[0] = y;
    std::visit(
        [](auto& a) {
          if constexpr (requires { a.activation; }) a.activation = Activation::Relu;
        },
        layer.attrs);
    if (vjp >= 0) g.nodes[vjp].inputs[0] = y;
    removed[relu] = true;
    ++rewrites;
  }
  erase_nodes(g, removed);
  return rewrites;
}

}  // namespace pipec

#include "runtime/train/gpu/tf32_exact_nodes.h"

#include "runtime/train/gpu/gpu_kernel_claim.h"

namespace pipec::gpu {

namespace {

// Whether instruction `id` of `fn` is cast(cast(x, bf16 or f16), f32): a round fused into an expr node
// (compiler/train/passes/fuse_round_into_expr.cpp), whose values are 16-bit ones.
bool rounds_to_16_bits(const ExprFunction& fn, int id) {
  const Instr& up = fn.body.at(static_cast<size_t>(id));
  if (up.op != OpKind::Cast || up.type.dtype != DType::F32 || up.operands.size() != 1) return false;
  const Instr& down = fn.body.at(static_cast<size_t>(up.operands[0]));
  return down.op == OpKind::Cast && (down.type.dtype == DType::BF16 || down.type.dtype == DType::F16);
}

}  // namespace

std::vector<bool> tf32_exact_nodes(const ModelGraph& g) {
  std::vector<bool> exact(g.nodes.size(), false);
  if (g.precision == Precision::Fp32) return exact;
  // Values holding 16-bit values: a round node's outputs, and an expr node's that its function rounds.
  std::vector<bool> rounded(g.values.size(), false);
  for (const GraphNode& n : g.nodes) {
    if (n.op == ModelOp::Round)
      for (int v : n.outputs) rounded.at(static_cast<size_t>(v)) = true;
    if (n.op == ModelOp::Expr && n.fn)
      for (size_t k = 0; k < n.outputs.size() && k < n.fn->results.size(); ++k)
        if (rounds_to_16_bits(*n.fn, n.fn->results[k].second)) rounded.at(static_cast<size_t>(n.outputs[k])) = true;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    const NodeKernel k = node_kernel_of(n.op);
    if ((k != NodeKernel::Cudnn && k != NodeKernel::CublasLt) || n.inputs.size() < 2) continue;
    exact[i] = rounded.at(static_cast<size_t>(n.inputs[0])) && rounded.at(static_cast<size_t>(n.inputs[1]));
  }
  return exact;
}

}  // namespace pipec::gpu

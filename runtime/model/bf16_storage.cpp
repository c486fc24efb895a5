#include "runtime/model/bf16_storage.h"

#include "runtime/plan/expr_function.h"

namespace pipec {

namespace {

// Whether node `n` reads input `k` in a way that takes bf16 as it is stored: an expr's compiled kernel,
// or a bf16 operand of conv2d or dense (x; in backward-data dy; in backward-weights x and dy; dy of a
// bias gradient, which the backward group computes from the same dy).
bool reads_bf16(const GraphNode& n, size_t k) {
  switch (n.op) {
    case ModelOp::Expr: return n.native != nullptr;
    case ModelOp::Conv2d:
    case ModelOp::Dense:
    case ModelOp::Conv2dBackwardInput:
    case ModelOp::DenseBackwardInput:
    case ModelOp::BiasBackward: return k == 0;
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::DenseBackwardKernel: return k == 0 || k == 1;
    default: return false;
  }
}

}  // namespace

bool expr_result_rounded_to_bf16(const GraphNode& n, size_t j) {
  if (n.op != ModelOp::Expr || !n.fn || j >= n.fn->results.size()) return false;
  const std::vector<Instr>& body = n.fn->body;
  const Instr& widen = body.at(static_cast<size_t>(n.fn->results[j].second));
  if (widen.op != OpKind::Cast || widen.type.dtype != DType::F32 || widen.operands.size() != 1) return false;
  const Instr& narrow = body.at(static_cast<size_t>(widen.operands[0]));
  if (narrow.op != OpKind::Cast || narrow.type.dtype != DType::BF16 || narrow.operands.size() != 1) return false;
  return body.at(static_cast<size_t>(narrow.operands[0])).type.dtype == DType::F32;
}

std::vector<bool> plan_bf16_storage(const ModelGraph& g) {
  std::vector<bool> bf16(g.values.size(), false);
  if (g.precision != Precision::MixedBf16) return bf16;
  // Per value: rounded when produced, read by some node, and read only where bf16 can be read.
  std::vector<bool> rounded(g.values.size(), false), read(g.values.size(), false), readable(g.values.size(), true);
  // A round node's output that only layers read: the executor leaves the rounding to those layers
  // (leave_rounds_to_bf16_layers), which read the f32 input; an expr reader keeps the round node.
  std::vector<bool> expr_reader(g.values.size(), false), by_round(g.values.size(), false);
  for (const GraphNode& n : g.nodes) {
    if (n.op == ModelOp::Round && n.attrs_as<RoundAttrs>().dtype == Float16::BF16)
      rounded[n.outputs[0]] = by_round[n.outputs[0]] = true;
    if (n.op == ModelOp::Expr && n.native)
      for (size_t j = 0; j < n.outputs.size(); ++j) rounded[n.outputs[j]] = expr_result_rounded_to_bf16(n, j);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int v = n.inputs[k];
      read[v] = true;
      if (!reads_bf16(n, k)) readable[v] = false;
      if (n.op == ModelOp::Expr) expr_reader[v] = true;
    }
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    const GraphValue& gv = g.values[v];
    const int id = static_cast<int>(v);
    if (!rounded[v] || !read[v] || !readable[v] || (by_round[v] && !expr_reader[v])) continue;
    if (id == g.output || id == g.loss || gv.dtype != DType::F32 || !gv.batched) continue;
    if (gv.role == ValueRole::Param || gv.role == ValueRole::State || gv.grad_of >= 0) continue;
    bf16[v] = true;
  }
  return bf16;
}

}  // namespace pipec

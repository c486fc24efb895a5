// fuse_round_into_expr: under mixed precision, a round node whose input only an expr node computes
// becomes part of that expr: the expr's function casts the result to the 16-bit type and back to f32
// (the interpreter's cast, to nearest even with NaNs kept quiet, is bit for bit what the round node
// does: runtime/core/half.h), the expr writes the rounded value itself, and the round node goes. The
// JIT compiles the two casts as one rounding in the expr's loop (compiler/codegen/loop_nest.h), so the
// step makes one pass over the values instead of two: it neither writes the unrounded tensor nor reads
// it back.
//
// Only when the unrounded value has no other reader (else it must exist) and the rounded one is an
// ordinary value of the step (not a parameter, state or parameter gradient, which live in the flat
// buffers: the fast executor runs an expr's compiled kernel only into the arena).
#include <map>
#include <memory>

#include "compiler/train/passes/erase_nodes.h"
#include "compiler/train/passes/step_passes.h"

namespace pipec {

namespace {

// Appends cast(cast(x, bf16 or f16), f32) to `fn`; returns the second cast's id.
int append_round(ExprFunction& fn, int x, Float16 dtype) {
  const Instr& src = fn.body.at(static_cast<size_t>(x));
  const SpecLoc loc = src.loc;
  const DType narrow = dtype == Float16::BF16 ? DType::BF16 : DType::F16;
  Instr down{OpKind::Cast,
             {x},
             {{"dtype", Value::make_symbol(std::string(dtype_name(narrow)))}},
             Type::tensor(narrow, src.type.shape),
             loc};
  const int d = fn.add(std::move(down));
  Instr up{OpKind::Cast,
           {d},
           {{"dtype", Value::make_symbol("f32")}},
           Type::tensor(DType::F32, fn.body[static_cast<size_t>(x)].type.shape),
           loc};
  return fn.add(std::move(up));
}

}  // namespace

int fuse_round_into_expr(ModelGraph& g) {
  std::vector<int> producer(g.values.size(), -1), readers(g.values.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int v : g.nodes[i].outputs) producer[v] = static_cast<int>(i);
    for (int v : g.nodes[i].inputs) ++readers[v];
  }
  std::map<int, std::shared_ptr<ExprFunction>> edited;  // per expr node: its function, copied once
  std::vector<bool> removed(g.nodes.size(), false);
  int rewrites = 0;
  for (size_t r = 0; r < g.nodes.size(); ++r) {
    const GraphNode& round = g.nodes[r];
    if (round.op != ModelOp::Round) continue;
    const int x = round.inputs.at(0), y = round.outputs.at(0);
    const int p = producer[x];
    if (p < 0 || g.nodes[p].op != ModelOp::Expr || !g.nodes[p].fn) continue;
    if (readers[x] != 1 || x == g.output || x == g.loss) continue;
    const GraphValue& yv = g.values[y];
    if (yv.role == ValueRole::Param || yv.role == ValueRole::State || yv.grad_of >= 0) continue;
    GraphNode& expr = g.nodes[p];
    size_t k = 0;
    while (k < expr.outputs.size() && expr.outputs[k] != x) ++k;
    if (k == expr.outputs.size()) continue;
    std::shared_ptr<ExprFunction>& fn = edited[p];
    if (!fn) fn = std::make_shared<ExprFunction>(*expr.fn);
    auto& result = fn->results.at(k).second;
    if (fn->body.at(static_cast<size_t>(result)).type.dtype != DType::F32) continue;
    result = append_round(*fn, result, round.attrs_as<RoundAttrs>().dtype);
    expr.outputs[k] = y;
    removed[r] = true;
    ++rewrites;
  }
  for (auto& [p, fn] : edited) g.nodes[p].fn = std::move(fn);
  erase_nodes(g, removed);
  return rewrites;
}

}  // namespace pipec

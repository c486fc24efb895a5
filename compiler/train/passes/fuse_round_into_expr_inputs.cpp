// fuse_round_into_expr_inputs: under mixed precision, a round node whose every reader is an expr node
// goes, and each reader rounds what it reads itself: its function casts that input to the 16-bit type and
// back to f32 (the interpreter's cast is bit for bit the round node's: runtime/core/half.h) and reads
// the round node's input instead. The JIT compiles the casts into the expr's loop (loop_nest.h), so the
// rounded tensor is never written and read back: a pass over memory less per such round node, for a
// few integer operations per element in each reader.
//
// Runs after fuse_round_into_expr, which has taken the round nodes whose input an expr computes. Only
// when the rounded value is an ordinary value of the step: not the model's output or loss, a
// parameter, state or a parameter's gradient (the optimizer reads those from the flat buffers, not as
// a node's input); and when the round node's input is not a parameter or state (an expr's compiled
// kernel reads batched values).
#include <algorithm>
#include <memory>

#include "compiler/train/passes/erase_nodes.h"
#include "compiler/train/passes/step_passes.h"

namespace pipec {

namespace {

// `fn` with the params of the input slots in `slots` rounded to `dtype`: the casts come right after the
// params (which come first), and every instruction that read such a param reads cast(cast(param, 16
// bits), f32) instead.
ExprFunction round_params(const ExprFunction& fn, const std::vector<size_t>& slots, Float16 dtype) {
  const DType narrow = dtype == Float16::BF16 ? DType::BF16 : DType::F16;
  ExprFunction out;
  out.name = fn.name;
  std::vector<int> remap(fn.body.size(), -1);
  size_t params = 0;
  while (params < fn.body.size() && op_has(fn.body[params].op, OpFlag::Input)) {
    remap[params] = out.add(fn.body[params]);
    ++params;
  }
  for (size_t slot : slots) {
    const Instr& p = fn.body.at(slot);
    const int down = out.add(Instr{OpKind::Cast,
                                   {static_cast<int>(slot)},
                                   {{"dtype", Value::make_symbol(std::string(dtype_name(narrow)))}},
                                   Type::tensor(narrow, p.type.shape),
                                   p.loc});
    remap[slot] = out.add(Instr{
        OpKind::Cast, {down}, {{"dtype", Value::make_symbol("f32")}}, Type::tensor(DType::F32, p.type.shape), p.loc});
  }
  for (size_t i = params; i < fn.body.size(); ++i) {
    Instr in = fn.body[i];
    for (int& o : in.operands) o = remap.at(static_cast<size_t>(o));
    remap[i] = out.add(std::move(in));
  }
  for (const auto& [name, id] : fn.results) out.results.emplace_back(name, remap.at(static_cast<size_t>(id)));
  return out;
}

// Whether `fn` takes its params first, one per input slot of `n` (the verifier's invariant).
bool params_are_slots(const GraphNode& n) {
  size_t params = 0;
  while (params < n.fn->body.size() && op_has(n.fn->body[params].op, OpFlag::Input)) ++params;
  return params == n.inputs.size();
}

}  // namespace

int fuse_round_into_expr_inputs(ModelGraph& g) {
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs) readers[v].push_back(static_cast<int>(i));
  std::vector<bool> param_grad(g.values.size(), false);
  for (int v : g.param_grads)
    if (v >= 0) param_grad[v] = true;
  std::vector<bool> removed(g.nodes.size(), false);
  int rewrites = 0;
  for (size_t r = 0; r < g.nodes.size(); ++r) {
    const GraphNode& round = g.nodes[r];
    if (round.op != ModelOp::Round) continue;
    const int x = round.inputs.at(0), y = round.outputs.at(0);
    const GraphValue &xv = g.values[x], &yv = g.values[y];
    if (readers[y].empty() || y == g.output || y == g.loss || param_grad[y] || yv.grad_of >= 0) continue;
    if (yv.role == ValueRole::Param || yv.role == ValueRole::State) continue;
    if (xv.role == ValueRole::Param || xv.role == ValueRole::State) continue;
    bool all_expr = true;
    for (int e : readers[y]) {
      const GraphNode& n = g.nodes[e];
      all_expr = all_expr && n.op == ModelOp::Expr && n.fn && params_are_slots(n);
    }
    if (!all_expr) continue;
    const Float16 dtype = round.attrs_as<RoundAttrs>().dtype;
    for (int e : readers[y]) {
      GraphNode& n = g.nodes[e];
      std::vector<size_t> slots;
      for (size_t j = 0; j < n.inputs.size(); ++j)
        if (n.inputs[j] == y) slots.push_back(j);
      if (slots.empty()) continue;  // a node reading y twice is listed twice: done the first time
      n.fn = std::make_shared<const ExprFunction>(round_params(*n.fn, slots, dtype));
      for (size_t j : slots) n.inputs[j] = x;
      readers[x].push_back(e);
    }
    removed[r] = true;
    ++rewrites;
  }
  erase_nodes(g, removed);
  return rewrites;
}

}  // namespace pipec

// The reverse sweep. A value needs a gradient when it is a float computed from a parameter and the loss
// is computed from it; nodes are visited from the loss back to the inputs, each through its kind's
// rule, and a value read by several nodes gets the sum of their contributions (an expr `add` node).
#include "compiler/train/gradients.h"

#include <fmt/format.h>

namespace pipec {

namespace {

// The sum of several gradients of one value, as expr add nodes.
int accumulate(ModelGraph& g, int value, const std::vector<int>& parts) {
  int sum = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) {
    const GraphValue& v = g.values[value];
    Type t = Type::tensor(v.dtype, v.shape);
    auto fn = std::make_shared<ExprFunction>();
    fn->name = fmt::format("expr@{}", g.nodes.size());
    int a = fn->add(Instr{OpKind::Param, {}, {{"field", Value::make_string("a")}}, t, {}});
    int b = fn->add(Instr{OpKind::Param, {}, {{"field", Value::make_string("b")}}, t, {}});
    fn->results = {{"y", fn->add(Instr{OpKind::Add, {a, b}, {}, t, {}})}};
    GraphValue out;
    out.dtype = v.dtype;
    out.shape = v.shape;
    out.batched = v.batched;
    out.role = ValueRole::Gradient;
    int id = g.add_value(out);
    GraphNode n;
    n.op = ModelOp::Expr;
    n.inputs = {sum, parts[k]};
    n.outputs = {id};
    n.fn = fn;
    n.phase = OpCategory::Backward;
    g.add_node(std::move(n));
    sum = id;
  }
  return sum;
}

}  // namespace

void append_gradients(ModelGraph& g, int loss) {
  const size_t forward_nodes = g.nodes.size();
  std::vector<bool> depends(g.values.size(), false), reaches(g.values.size(), false);
  for (int p : g.params) depends[p] = true;
  for (size_t i = 0; i < forward_nodes; ++i) {
    bool any = false;
    for (int v : g.nodes[i].inputs) any = any || depends[v];
    for (int o : g.nodes[i].outputs) depends[o] = any;
  }
  reaches[loss] = true;
  for (size_t i = forward_nodes; i-- > 0;) {
    bool any = false;
    for (int o : g.nodes[i].outputs) any = any || reaches[o];
    if (any)
      for (int v : g.nodes[i].inputs) reaches[v] = true;
  }
  auto needs = [&](int v) { return depends[v] && reaches[v] && is_float(g.values[v].dtype); };

  std::vector<std::vector<int>> contributions(g.values.size());
  auto adjoint = [&](int v) -> int {
    auto& parts = contributions[v];
    if (parts.empty()) return -1;
    if (parts.size() > 1) parts = {accumulate(g, v, parts)};
    return parts[0];
  };
  for (size_t i = forward_nodes; i-- > 0;) {
    const GraphNode node = g.nodes[i];
    GradientRule rule = gradient_rule(node.op);
    if (!rule) continue;
    std::vector<bool> wants;
    bool any_wanted = false;
    for (int v : node.inputs) {
      wants.push_back(needs(v));
      any_wanted = any_wanted || wants.back();
    }
    if (!any_wanted) continue;
    std::vector<int> dy;
    bool any_dy = node.op == ModelOp::Loss;
    for (int o : node.outputs) {
      dy.push_back(o == loss ? -1 : adjoint(o));
      any_dy = any_dy || dy.back() >= 0;
    }
    if (!any_dy) continue;
    GradientContext c{g, static_cast<int>(i), node, dy, wants, std::vector<int>(node.inputs.size(), -1)};
    rule(c);
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (c.grads[k] >= 0) contributions[node.inputs[k]].push_back(c.grads[k]);
  }
  g.param_grads.clear();
  for (int p : g.params) {
    const auto& parts = contributions[p];
    if (parts.size() > 1)
      throw std::logic_error(fmt::format("parameter {} is read by {} nodes", g.values[p].name, parts.size()));
    g.param_grads.push_back(parts.empty() ? -1 : parts[0]);
  }
}

}  // namespace pipec

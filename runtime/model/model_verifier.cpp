// Invariants of the model IR, checked after lowering and after the gradient pass (a graph that fails
// them is a compiler bug, reported as an internal error with the graph printed).
#include <algorithm>

#include <fmt/format.h>

#include "runtime/model/model_graph.h"

namespace pipec {

namespace {

// Whether `v` is `of` itself or `of` after a mixed-precision round node.
bool is_or_rounds(const ModelGraph& g, const std::vector<int>& producer, int v, int of) {
  if (v == of) return true;
  const int p = v >= 0 && v < static_cast<int>(producer.size()) ? producer[v] : -1;
  return p >= 0 && g.nodes[p].op == ModelOp::Round && g.nodes[p].inputs.at(0) == of;
}

// A backward node made by the gradient pass names its forward node, one of its kind's forward kinds
// earlier in the graph, and reads what model_ops.def says: the forward's inputs and outputs (or their
// rounded copies under mixed precision) and gradients for the adjoints.
template <class Err>
void verify_forward_link(const ModelGraph& g, int i, const std::vector<int>& producer, const Err& err) {
  const GraphNode& n = g.nodes[i];
  const ModelOpInfo& info = model_op_info(n.op);
  if (n.forward < 0) {
    if (!info.forward.empty()) err("names no forward node (the gradient pass links every backward node)");
    return;
  }
  if (n.forward >= i) {
    err(fmt::format("names node {} as its forward node, which does not come before it", n.forward));
    return;
  }
  const GraphNode& fw = g.nodes[n.forward];
  if (n.op == ModelOp::Expr) {
    if (fw.op != ModelOp::Expr || n.phase != OpCategory::Backward)
      err(fmt::format("is an expr node linked to a {} node", model_op_name(fw.op)));
    return;
  }
  if (std::find(info.forward.begin(), info.forward.end(), fw.op) == info.forward.end()) {
    err(fmt::format("names a {} node as its forward node", model_op_name(fw.op)));
    return;
  }
  for (size_t k = 0; k < info.reads.size() && k < n.inputs.size(); ++k) {
    const ForwardValue r = info.reads[k];
    const int v = n.inputs[k];
    const std::vector<int>& side = r.source == ForwardValue::Input ? fw.inputs : fw.outputs;
    if (r.source == ForwardValue::Adjoint) {
      if (v < 0 || v >= static_cast<int>(g.values.size()) || g.values[v].role != ValueRole::Gradient)
        err(fmt::format("input {} should be the adjoint of its forward's output {}", k, r.index));
    } else if (r.index >= static_cast<int>(side.size()) || !is_or_rounds(g, producer, v, side[r.index])) {
      err(fmt::format("input {} should be its forward's {} {}", k, r.source == ForwardValue::Input ? "input" : "output",
                      r.index));
    }
  }
}

}  // namespace

std::vector<std::string> verify_model_graph(const ModelGraph& g) {
  std::vector<std::string> errs;
  const int nv = static_cast<int>(g.values.size());
  std::vector<int> producer(nv, -1);
  auto valid = [&](int v) { return v >= 0 && v < nv; };
  auto given = [&](int v) {
    ValueRole r = g.values[v].role;
    return r == ValueRole::Input || r == ValueRole::Target || r == ValueRole::Param || r == ValueRole::State;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    const ModelOpInfo& info = model_op_info(n.op);
    auto err = [&](const std::string& m) { errs.push_back(fmt::format("node {} {}: {}", i, info.name, m)); };
    if (!runs_in_any_phase(n.op) && n.phase != info.category) err("runs in another phase than its kind's");
    if (n.attrs.index() != info.attrs)
      err(fmt::format("holds {}; its kind's attributes are {}", attrs_name(n.attrs), attrs_name(info.attrs)));
    verify_forward_link(g, static_cast<int>(i), producer, err);
    if (info.inputs >= 0 && static_cast<int>(n.inputs.size()) != info.inputs)
      err(fmt::format("takes {} inputs, has {}", info.inputs, n.inputs.size()));
    if (info.outputs >= 0 && static_cast<int>(n.outputs.size()) != info.outputs)
      err(fmt::format("makes {} outputs, has {}", info.outputs, n.outputs.size()));
    for (int v : n.inputs) {
      if (!valid(v)) {
        err(fmt::format("input %{} does not exist", v));
        continue;
      }
      if (!given(v) && (producer[v] < 0 || producer[v] >= static_cast<int>(i)))
        err(fmt::format("input %{} is used before it is computed", v));
      ValueRole r = g.values[v].role;
      if (n.op == ModelOp::Expr && (r == ValueRole::Param || r == ValueRole::State))
        err(fmt::format("parameter %{} feeds an expr node; parameters are read by layers only", v));
    }
    for (int v : n.outputs) {
      if (!valid(v)) {
        err(fmt::format("output %{} does not exist", v));
        continue;
      }
      if (given(v))
        err(fmt::format("output %{} is a {} value, which no node computes", v, value_role_name(g.values[v].role)));
      else if (producer[v] >= 0) err(fmt::format("output %{} is also computed by node {}", v, producer[v]));
      else producer[v] = static_cast<int>(i);
      if (n.op == ModelOp::Expr && g.values[v].grad_of >= 0)
        err(fmt::format("parameter gradient %{} comes from an expr node", v));
    }
    if (n.op == ModelOp::Expr) {
      if (!n.fn) {
        err("has no function");
        continue;
      }
      for (const std::string& e : verify_function(*n.fn)) err(e);
      std::vector<const Instr*> params;
      for (const Instr& in : n.fn->body)
        if (op_has(in.op, OpFlag::Input)) params.push_back(&in);
      if (params.size() != n.inputs.size())
        err(fmt::format("its function takes {} values for {} inputs", params.size(), n.inputs.size()));
      for (size_t k = 0; k < params.size() && k < n.inputs.size(); ++k) {
        if (!valid(n.inputs[k])) continue;
        const GraphValue& v = g.values[n.inputs[k]];
        if (!v.batched) err(fmt::format("input %{} is not batched", n.inputs[k]));
        if (params[k]->type.dtype != v.dtype || params[k]->type.shape != v.shape)
          err(fmt::format("parameter {} of its function is {} but input %{} is {}[{}]", k,
                          type_to_string(params[k]->type), n.inputs[k], dtype_name(v.dtype), shape_to_spec(v.shape)));
      }
      if (n.fn->results.size() != n.outputs.size())
        err(fmt::format("its function returns {} values for {} outputs", n.fn->results.size(), n.outputs.size()));
      for (size_t k = 0; k < n.fn->results.size() && k < n.outputs.size(); ++k) {
        int id = n.fn->results[k].second;
        if (id < 0 || static_cast<size_t>(id) >= n.fn->body.size() || !valid(n.outputs[k])) continue;
        const Type& t = n.fn->body[id].type;
        const GraphValue& v = g.values[n.outputs[k]];
        if (t.dtype != v.dtype || t.shape != v.shape || !v.batched)
          err(fmt::format("result {} of its function is {} but output %{} is {}[{}]", k, type_to_string(t),
                          n.outputs[k], dtype_name(v.dtype), shape_to_spec(v.shape)));
      }
    }
  }
  // Parameter and state views tile their flat buffers, in order.
  auto tiles = [&](const std::vector<int>& ids, ValueRole role, const char* what) {
    int64_t at = 0;
    for (int v : ids) {
      if (!valid(v)) {
        errs.push_back(fmt::format("{} %{} does not exist", what, v));
        continue;
      }
      const GraphValue& x = g.values[v];
      if (x.role != role) errs.push_back(fmt::format("{} %{} has role {}", what, v, value_role_name(x.role)));
      if (x.batched) errs.push_back(fmt::format("{} %{} is batched", what, v));
      if (x.offset != at) errs.push_back(fmt::format("{} %{} sits at {} instead of {}", what, v, x.offset, at));
      if (!x.shape.empty() && shape_num_elements(x.shape) <= 0)
        errs.push_back(fmt::format("{} %{} has no elements", what, v));
      at += x.elements_per_example();
    }
  };
  tiles(g.params, ValueRole::Param, "parameter");
  tiles(g.states, ValueRole::State, "state");
  if (!g.param_grads.empty() && g.param_grads.size() != g.params.size())
    errs.push_back(fmt::format("{} gradients for {} parameters", g.param_grads.size(), g.params.size()));
  for (size_t k = 0; k < g.param_grads.size() && k < g.params.size(); ++k) {
    int d = g.param_grads[k];
    if (d < 0) continue;
    if (!valid(d) || producer[d] < 0) {
      errs.push_back(fmt::format("the gradient of %{} is not computed", g.params[k]));
      continue;
    }
    const GraphValue& gv = g.values[d];
    if (gv.grad_of != g.params[k] || gv.role != ValueRole::Gradient || gv.batched ||
        gv.shape != g.values[g.params[k]].shape)
      errs.push_back(fmt::format("%{} is not shaped as the gradient of parameter %{}", d, g.params[k]));
  }
  for (int v : g.inputs)
    if (!valid(v) || g.values[v].role != ValueRole::Input)
      errs.push_back(fmt::format("model input %{} is not an input value", v));
  if (!valid(g.output)) errs.push_back("the graph has no output");
  if (g.loss >= 0 && (!valid(g.loss) || g.values[g.loss].batched || !g.values[g.loss].shape.empty()))
    errs.push_back("the loss is not a scalar");
  if (g.loss >= 0 && (!valid(g.target) || g.values[g.target].role != ValueRole::Target))
    errs.push_back("the loss has no target value");
  return errs;
}

}  // namespace pipec

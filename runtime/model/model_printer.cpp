// `pipec explain`'s text of a model or training-step graph: inputs, parameters, then the nodes by
// phase (forward, loss, backward, update) with their types, layers, spec locations and FLOPs, then the
// functions of the expr nodes that hold more than one instruction.
#include <fmt/format.h>

#include "runtime/model/model_graph.h"
#include "runtime/model/step_memory.h"

namespace pipec {

namespace {

std::string thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string value_type(const GraphValue& v) {
  std::string dims;
  if (v.batched) dims = "B";
  for (int64_t d : v.shape) dims += (dims.empty() ? "" : ", ") + (d < 0 ? std::string("?") : std::to_string(d));
  return dims.empty() && !v.batched ? std::string(dtype_name(v.dtype))
                                    : fmt::format("{}[{}]", dtype_name(v.dtype), dims);
}

std::string attr_text(const Value& v) {
  std::string s = v.to_string();
  if (s.size() > 60) s = s.substr(0, 57) + "...]";
  return s;
}

// An expr node's one instruction's attributes (the expression IR's, by name).
std::string attrs_text(const std::map<std::string, Value>& attrs) {
  std::string out;
  for (const auto& [name, v] : attrs) out += fmt::format(" {}={}", name, attr_text(v));
  return out;
}

// A node's typed attributes (model_attrs.def), sorted by name.
std::string attrs_text(const ModelAttrs& attrs) {
  std::string out;
  for (const auto& [name, text] : attr_texts(attrs))
    out += fmt::format(" {}={}", name, text.size() > 60 ? text.substr(0, 57) + "...]" : text);
  return out;
}

bool single_instruction(const ExprFunction& fn, const Instr** only) {
  const Instr* found = nullptr;
  for (const Instr& i : fn.body) {
    if (op_has(i.op, OpFlag::Input)) continue;
    if (found) return false;
    found = &i;
  }
  if (!found || fn.results.size() != 1) return false;
  // Printed as `op(inputs)` only when its operands are the node's inputs, in order.
  std::vector<int> params;
  for (size_t i = 0; i < fn.body.size(); ++i)
    if (op_has(fn.body[i].op, OpFlag::Input)) params.push_back(static_cast<int>(i));
  if (found->operands != params) return false;
  *only = found;
  return true;
}

std::string node_line(const ModelGraph& g, int index, const GraphNode& n, std::vector<const GraphNode*>& functions) {
  std::string outs;
  for (int o : n.outputs) outs += (outs.empty() ? "%" : ", %") + std::to_string(o);
  std::string ins;
  for (int i : n.inputs) ins += (ins.empty() ? "%" : ", %") + std::to_string(i);
  std::string op = model_op_name(n.op);
  std::string attrs = attrs_text(n.attrs);
  const Instr* only = nullptr;
  if (n.op == ModelOp::Expr && n.fn) {
    if (single_instruction(*n.fn, &only)) {
      op = op_name(only->op);
      attrs = attrs_text(only->attrs);
    } else {
      attrs = " fn=" + n.fn->name;
      functions.push_back(&n);
    }
  }
  std::string types;
  for (int o : n.outputs) types += (types.empty() ? "" : ", ") + value_type(g.values[o]);
  std::string line = outs.empty() ? fmt::format("    {}({}){}", op, ins, attrs)
                                  : fmt::format("    {} = {}({}){} : {}", outs, op, ins, attrs, types);
  std::string notes;
  if (!n.layer.empty()) notes += n.layer;
  if (n.loc.valid()) notes += fmt::format("{}{}:{}", notes.empty() ? "" : " ", n.loc.line, n.loc.col);
  int64_t flops = node_flops(g, n, 1);
  bool per_step = n.op == ModelOp::OptimizerStep || n.op == ModelOp::MovingAverage;
  if (flops > 0)
    notes += fmt::format("{}{} FLOPs{}", notes.empty() ? "" : ", ", thousands(flops), per_step ? "/step" : "");
  if (!notes.empty()) line += "   # " + notes;
  return line + "\n";
}

}  // namespace

std::string print_model_graph(const ModelGraph& g) {
  std::string out = fmt::format("model {}", g.name);
  if (g.batch >= 0) out += fmt::format(" (B = {})", g.batch);
  out += "\n  inputs\n";
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    int v = g.inputs[k];
    std::string from = k < g.input_fields.size() ? "  <- field " + g.input_fields[k] : "";
    out += fmt::format("    %{} {}: {}{}\n", v, g.values[v].name, value_type(g.values[v]), from);
  }
  if (g.target >= 0)
    out += fmt::format("    %{} {}: {}  <- field {} (loss target)\n", g.target, g.values[g.target].name,
                       value_type(g.values[g.target]), g.target_field);
  auto tensors = [&](const char* title, const std::vector<int>& ids, int64_t elements) {
    if (ids.empty()) return;
    out += fmt::format("  {}: {} in {} tensor{} ({:.2f} MB)\n", title, thousands(elements), ids.size(),
                       ids.size() == 1 ? "" : "s", elements * 4 / 1e6);
    for (int p : ids) {
      const GraphValue& v = g.values[p];
      std::string init = init_name(v.init);
      if (v.init == Init::GlorotUniform) init += fmt::format("(fan_in={}, fan_out={})", v.fan_in, v.fan_out);
      if (v.init == Init::Uniform) init += fmt::format("(-{0}, {0})", kUniformInitLimit);
      out += fmt::format("    %{} {}: {}  {}  at {}\n", p, v.name, value_type(v), init, thousands(v.offset));
    }
  };
  tensors("parameters", g.params, g.param_elements());
  tensors("state", g.states, g.state_elements());
  std::vector<const GraphNode*> functions;
  int64_t per_example[4] = {0, 0, 0, 0};
  int64_t per_step = 0;
  const char* titles[4] = {"forward", "loss", "backward", "update"};
  for (int c = 0; c < 4; ++c) {
    std::string section;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const GraphNode& n = g.nodes[i];
      if (static_cast<int>(n.phase) != c) continue;
      section += node_line(g, static_cast<int>(i), n, functions);
      if (n.op == ModelOp::OptimizerStep || n.op == ModelOp::MovingAverage) per_step += node_flops(g, n, 1);
      else per_example[c] += node_flops(g, n, 1);
    }
    if (!section.empty()) out += fmt::format("  {}\n{}", titles[c], section);
  }
  if (g.output >= 0) out += fmt::format("  output %{}: {}\n", g.output, value_type(g.values[g.output]));
  if (g.loss >= 0) out += fmt::format("  loss %{}: {}\n", g.loss, value_type(g.values[g.loss]));
  out += fmt::format("  {} parameters; FLOPs per example: forward {}", thousands(g.param_elements()),
                     thousands(per_example[0]));
  if (g.loss >= 0) {
    out += fmt::format(", loss {}, backward {}", thousands(per_example[1]), thousands(per_example[2]));
    int64_t total = per_example[0] + per_example[1] + per_example[2];
    if (g.batch > 0) out += fmt::format("; per step of {}: {}", g.batch, thousands(total * g.batch + per_step));
  }
  out += "\n";
  if (g.loss >= 0 && g.batch > 0) {
    // The liveness plan (step_memory.h): what a step holds at its peak, beside the flat buffers.
    StepMemory m = step_memory(g, g.batch);
    out += fmt::format(
        "  memory per step of {}: activations and gradients {} at the peak (during {} node {}), computed values in "
        "one block of {} planned by liveness, flat buffers {}\n",
        g.batch, bytes_text(m.peak_activation_bytes), model_op_name(g.nodes.at(m.peak_node).op), m.peak_node,
        bytes_text(m.arena_bytes), bytes_text(m.flat_bytes));
  }
  for (const GraphNode* n : functions) out += "\n" + print_function(*n->fn);
  return out;
}

}  // namespace pipec

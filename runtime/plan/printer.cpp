// Text forms of the IR for `pipec explain` and the golden tests.
#include <fmt/format.h>

#include "runtime/plan/plan.h"

namespace pipec {

bool has_element_kernel(const Stage& s) { return stage_has(s.kind, StageFlag::ElementKernel); }

std::vector<std::string> function_input_fields(const Plan& plan, int stage) {
  const Stage& s = plan.stages.at(static_cast<size_t>(stage));
  std::vector<std::string> out;
  if (s.kind == StageKind::Scan)
    if (const Value* init = s.arg("initial"))
      for (const Value& pair : init->items) out.push_back(pair.items.at(0).s);
  if (!s.inputs.empty())
    for (const Field& f : plan.stages.at(static_cast<size_t>(s.inputs[0])).element.fields) out.push_back(f.name);
  return out;
}

const Value* Stage::arg(const std::string& name) const {
  for (const auto& [n, v] : args)
    if (n == name) return &v;
  return nullptr;
}

static std::string attr_text(const Value& v) {
  std::string s = v.to_string();
  // Long constant lists (gather indices, plane signs) stay readable.
  if (s.size() > 60) s = s.substr(0, 57) + "...]";
  return s;
}

std::string print_function(const ExprFunction& fn) {
  std::string out = "fn " + fn.name + "(";
  bool first = true;
  for (size_t i = 0; i < fn.body.size(); ++i) {
    const Instr& in = fn.body[i];
    if (in.op != OpKind::Param) continue;
    if (!first) out += ", ";
    first = false;
    out += fmt::format("%{} {}: {}", i, in.attrs.at("field").s, type_to_string(in.type));
  }
  out += ") {\n";
  for (size_t i = 0; i < fn.body.size(); ++i) {
    const Instr& in = fn.body[i];
    if (in.op == OpKind::Param) continue;
    std::string line = fmt::format("  %{} = {}", i, op_name(in.op));
    for (size_t k = 0; k < in.operands.size(); ++k) line += fmt::format("{} %{}", k ? "," : "", in.operands[k]);
    bool first_attr = true;
    for (const auto& [name, v] : in.attrs) {
      line += first_attr && in.operands.empty() ? " " : first_attr ? " " : ", ";
      if (first_attr && !in.operands.empty()) line = line.substr(0, line.size() - 1) + " [";
      else if (first_attr) line += "[";
      first_attr = false;
      line += name + "=" + attr_text(v);
    }
    if (!first_attr) line += "]";
    line += " : " + type_to_string(in.type);
    out += line + "\n";
  }
  out += "  return {";
  for (size_t i = 0; i < fn.results.size(); ++i)
    out += fmt::format("{}{}: %{}", i ? ", " : "", fn.results[i].first, fn.results[i].second);
  out += "}\n}\n";
  return out;
}

// `bind`: for a flat_map's inner plan, its parent's bindings [[stage, argument, field], ...], shown as
// `argument = element.field` among the stage's arguments.
static std::string print_plan(const Plan& plan, const Value* bind) {
  std::string out = "pipeline " + plan.name + "\n";
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    std::string args;
    for (const auto& in : s.inputs) args += fmt::format("{}#{}", args.empty() ? "" : ", ", in);
    if (bind)
      for (const Value& b : bind->items)
        if (b.kind == Value::List && b.items.size() == 3 && b.items[0].i == static_cast<int64_t>(i))
          args += fmt::format("{}{} = element.{}", args.empty() ? "" : ", ", b.items[1].s, b.items[2].s);
    for (const auto& [n, v] : s.args) {
      if (s.inner && n == "bind") continue;  // shown in the inner pipeline
      args += fmt::format("{}{} = {}", args.empty() ? "" : ", ", n, attr_text(v));
    }
    if (s.fn) args += fmt::format("{}fn = {}", args.empty() ? "" : ", ", s.fn->name);
    std::string where;
    if (s.loc.valid()) where = fmt::format("  ({}:{})", s.loc.line, s.loc.col);
    out += fmt::format("  #{} {}({}){}\n", i, stage_name(s.kind), args, where);
    for (const SchemaEntry& e : s.schema)
      out += fmt::format("       field {}: {}{}{}\n", e.name, type_to_string(e.type),
                         e.fixed_bytes ? " (fixed-length bytes)" : "",
                         e.default_value ? " = " + e.default_value->to_string() : "");
    out += "       -> " + element_to_string(s.element) + "\n";
    // flat_map's pipeline, one per input element: indented under the stage, with its own functions.
    if (s.inner) {
      std::string text = print_plan(*s.inner, s.arg("bind"));
      size_t at = 0;
      while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(at, end - at);
        out += line.empty() ? "\n" : "       | " + line + "\n";
        at = end + 1;
      }
    }
  }
  for (const Stage& s : plan.stages)
    if (s.fn) out += "\n" + print_function(*s.fn);
  return out;
}

std::string print_plan(const Plan& plan) { return print_plan(plan, nullptr); }

}  // namespace pipec

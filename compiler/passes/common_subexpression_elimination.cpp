#include "compiler/passes/common_subexpression_elimination.h"

#include <bit>
#include <cstdint>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/passes/function_edit.h"
#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

// An exact text key for a value: floats by their bits, so 0.0 and -0.0 (or two NaNs) never meet.
void value_key(const Value& v, std::string& out) {
  out += fmt::format("{}:{}:", static_cast<int>(v.kind), static_cast<int>(v.dtype));
  switch (v.kind) {
    case Value::Int: out += std::to_string(v.i); break;
    case Value::Float: out += std::to_string(std::bit_cast<uint64_t>(v.f)); break;
    case Value::Bool: out += v.b ? "1" : "0"; break;
    case Value::String:
    case Value::Symbol: out += std::to_string(v.s.size()) + "'" + v.s; break;
    case Value::List:
      out += "[";
      for (const Value& x : v.items) {
        value_key(x, out);
        out += ",";
      }
      out += "]";
      break;
  }
}

std::string instr_key(const Instr& in) {
  std::string k = std::string(op_name(in.op)) + "(";
  for (int o : in.operands) k += std::to_string(o) + ",";
  k += "){";
  for (const auto& [name, v] : in.attrs) {
    k += name + "=";
    value_key(v, k);
    k += ";";
  }
  k += "}:" + type_to_string(in.type);
  return k;
}

bool cse_function(ExprFunction& fn) {
  bool changed = false;
  std::unordered_map<std::string, int> seen;
  for (size_t i = 0; i < fn.body.size(); ++i) {
    Instr& in = fn.body[i];
    if (in.op == OpKind::Param || op_has(in.op, OpFlag::Random)) continue;
    // Operands were already redirected to their first equal (they come earlier), so equal operands
    // have equal ids here.
    auto [it, fresh] = seen.emplace(instr_key(in), static_cast<int>(i));
    if (fresh) continue;
    replace_uses(fn, static_cast<int>(i), it->second);
    changed = true;
  }
  // The duplicates are dead now; dead_code_elimination removes them.
  return changed;
}

}  // namespace

bool common_subexpression_elimination(Plan& plan) { return rewrite_functions(plan, cse_function); }

}  // namespace pipec

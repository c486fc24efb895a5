#include "compiler/passes/function_edit.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>

namespace pipec {

bool remove_unused_instrs(ExprFunction& fn) {
  const size_t n = fn.body.size();
  std::vector<bool> live(n, false);
  for (const auto& [name, id] : fn.results) live.at(static_cast<size_t>(id)) = true;
  for (size_t i = n; i-- > 0;)
    if (live[i])
      for (int o : fn.body[i].operands) live.at(static_cast<size_t>(o)) = true;
  if (std::all_of(live.begin(), live.end(), [](bool b) { return b; })) return false;
  std::vector<int> new_id(n, -1);
  std::vector<Instr> body;
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    Instr in = std::move(fn.body[i]);
    for (int& o : in.operands) o = new_id[static_cast<size_t>(o)];
    new_id[i] = static_cast<int>(body.size());
    body.push_back(std::move(in));
  }
  fn.body = std::move(body);
  for (auto& [name, id] : fn.results) id = new_id[static_cast<size_t>(id)];
  return true;
}

void replace_uses(ExprFunction& fn, int from, int to) {
  for (Instr& in : fn.body)
    for (int& o : in.operands)
      if (o == from) o = to;
  for (auto& [name, id] : fn.results)
    if (id == from) id = to;
}

std::vector<int> append_function(ExprFunction& into, const ExprFunction& g,
                                 const std::function<int(const std::string&)>& bind) {
  std::vector<int> map(g.body.size(), -1);
  for (size_t i = 0; i < g.body.size(); ++i) {
    const Instr& in = g.body[i];
    if (in.op == OpKind::Param) {
      map[i] = bind(in.attrs.at("field").s);
      if (map[i] < 0) throw std::logic_error("append_function: unbound parameter " + in.attrs.at("field").s);
      continue;
    }
    Instr copy = in;
    for (int& o : copy.operands) o = map.at(static_cast<size_t>(o));
    map[i] = into.add(std::move(copy));
  }
  return map;
}

int param_field_index(const Instr& param, const std::vector<std::string>& fields) {
  auto f = param.attrs.find("field");
  if (f == param.attrs.end()) return -1;
  auto it = std::find(fields.begin(), fields.end(), f->second.s);
  if (it != fields.end()) return static_cast<int>(it - fields.begin());
  return fields.size() == 1 ? 0 : -1;
}

bool same_value(const Value& a, const Value& b) {
  if (a.kind != b.kind || a.dtype != b.dtype) return false;
  switch (a.kind) {
    case Value::Int: return a.i == b.i;
    case Value::Float: return std::bit_cast<uint64_t>(a.f) == std::bit_cast<uint64_t>(b.f);  // 0.0 is not -0.0
    case Value::Bool: return a.b == b.b;
    case Value::String:
    case Value::Symbol: return a.s == b.s;
    case Value::List:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!same_value(a.items[i], b.items[i])) return false;
      return true;
  }
  return false;
}

std::shared_ptr<ExprFunction> compose_functions(const ExprFunction& f, const ExprFunction& g) {
  auto fused = std::make_shared<ExprFunction>(f);
  fused->name = f.name + "+" + g.name;
  std::vector<std::string> names;
  for (const auto& [name, id] : f.results) names.push_back(name);
  std::vector<int> at = append_function(*fused, g, [&](const std::string& field) {
    Instr probe;
    probe.attrs["field"] = Value::make_string(field);
    int k = param_field_index(probe, names);
    return k < 0 ? -1 : f.results[static_cast<size_t>(k)].second;
  });
  fused->results.clear();
  for (const auto& [name, id] : g.results) fused->results.push_back({name, at[static_cast<size_t>(id)]});
  return fused;
}

}  // namespace pipec

#include "compiler/passes/projection_pushdown.h"

#include <set>

#include "compiler/passes/function_edit.h"
#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

using Names = std::set<std::string>;

// Stages that hand on their input's fields as they are (whatever they do to the elements).
bool keeps_fields(const Stage& s) { return stage_has(s.kind, StageFlag::KeepsFields); }

// A cache in memory keeps its input's fields; one in files writes them all.
bool memory_cache(const Stage& s) {
  return s.kind == StageKind::Cache && (!s.arg("where") || s.arg("where")->kind == Value::Symbol);
}

Names all_fields(const ElementInfo& e) {
  Names n;
  for (const Field& f : e.fields) n.insert(f.name);
  return n;
}

// The input fields a function reads (its parameters that some result needs).
Names fields_read(const ExprFunction& fn, const ElementInfo& input) {
  std::vector<std::string> names;
  for (const Field& f : input.fields) names.push_back(f.name);
  ExprFunction live = fn;
  remove_unused_instrs(live);
  Names out;
  for (const Instr& in : live.body)
    if (in.op == OpKind::Param)
      if (int k = param_field_index(in, names); k >= 0) out.insert(names[static_cast<size_t>(k)]);
  return out;
}

bool prunable_source(const Stage& s) {
  if (s.kind == StageKind::Tfrecord) return true;
  // A CSV file with a header finds its columns by name; without one, by position.
  if (s.kind == StageKind::Csv) {
    const Value* h = s.arg("header");
    return !h || (h->kind == Value::Bool && h->b);
  }
  return false;
}

// Keeps the fields named in `keep` (at least one, so a chunk still has a column to count rows by).
std::vector<Field> keep_fields(const std::vector<Field>& fields, const Names& keep) {
  std::vector<Field> out;
  for (const Field& f : fields)
    if (keep.count(f.name)) out.push_back(f);
  if (out.empty() && !fields.empty()) out.push_back(fields[0]);
  return out;
}

}  // namespace

bool projection_pushdown(Plan& plan) {
  const int n = static_cast<int>(plan.stages.size());
  // With ignore_errors, an element whose unread field fails to parse or compute is dropped; it must
  // still be, so nothing is pruned.
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::IgnoreErrors) return false;
  // need[i]: the fields readers of stage i use (filled from the output backwards).
  std::vector<Names> need(static_cast<size_t>(n));
  need[n - 1] = all_fields(plan.stages[n - 1].element);
  for (int i = n - 1; i >= 0; --i) {
    const Stage& s = plan.stages[i];
    Names req;  // what stage i needs of its input(s)
    bool everything = false;
    const bool map_filter = s.kind == StageKind::MapFilter;
    if ((s.kind == StageKind::Map || map_filter) && s.fn && !s.native && s.inputs.size() == 1) {
      ExprFunction fn = *s.fn;
      std::vector<std::pair<std::string, int>> results;
      for (const auto& r : fn.results)
        if (need[i].count(r.first) || (map_filter && &r == &fn.results.back())) results.push_back(r);
      if (results.empty()) results.push_back(fn.results.front());
      fn.results = results;
      req = fields_read(fn, plan.stages[s.inputs[0]].element);
    } else if (s.kind == StageKind::Filter && s.fn && !s.native && s.inputs.size() == 1) {
      req = fields_read(*s.fn, plan.stages[s.inputs[0]].element);
      req.insert(need[i].begin(), need[i].end());
    } else if (keeps_fields(s) || memory_cache(s)) {
      req = need[i];
    } else {
      everything = true;  // zip, sinks, caches in files, stages this pass does not know
    }
    for (int in : s.inputs) {
      const Names& add = everything ? all_fields(plan.stages[in].element) : req;
      need[in].insert(add.begin(), add.end());
    }
  }
  // Forwards: what each stage delivers, which becomes its element.
  bool changed = false;
  for (int i = 0; i < n; ++i) {
    Stage& s = plan.stages[i];
    const size_t before = s.element.fields.size();
    if (s.inputs.empty()) {
      if (prunable_source(s)) {
        s.element.fields = keep_fields(s.element.fields, need[i]);
        Names kept = all_fields(s.element);
        std::vector<SchemaEntry> schema;
        for (const SchemaEntry& e : s.schema)
          if (kept.count(e.name)) schema.push_back(e);
        changed = changed || schema.size() != s.schema.size();
        s.schema = std::move(schema);
      }
    } else if ((s.kind == StageKind::Map || s.kind == StageKind::MapFilter) && s.fn && !s.native) {
      std::vector<Field> fields = keep_fields(s.element.fields, need[i]);
      if (fields.size() != s.element.fields.size()) {
        Names kept;
        for (const Field& f : fields) kept.insert(f.name);
        auto fn = std::make_shared<ExprFunction>(*s.fn);
        std::vector<std::pair<std::string, int>> results;
        for (size_t k = 0; k < fn->results.size(); ++k)
          if (kept.count(fn->results[k].first) || (s.kind == StageKind::MapFilter && k + 1 == fn->results.size()))
            results.push_back(fn->results[k]);
        fn->results = std::move(results);
        remove_unused_instrs(*fn);
        s.fn = fn;
        s.element.fields = std::move(fields);
      }
    } else if (s.kind == StageKind::Filter || keeps_fields(s) || s.kind == StageKind::Cache) {
      // Hands on exactly what its input delivers.
      if (s.inputs.size() == 1)
        s.element.fields = keep_fields(s.element.fields, all_fields(plan.stages[s.inputs[0]].element));
    }
    changed = changed || s.element.fields.size() != before;
  }
  return changed;
}

}  // namespace pipec

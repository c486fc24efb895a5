#include "compiler/passes/plan_edit.h"

#include <algorithm>
#include <stdexcept>

namespace pipec {

std::vector<int> consumers(const Plan& plan, int stage) {
  std::vector<int> out;
  for (size_t i = 0; i < plan.stages.size(); ++i)
    for (int in : plan.stages[i].inputs)
      if (in == stage) out.push_back(static_cast<int>(i));
  return out;
}

void erase_stage(Plan& plan, int stage) {
  const Stage& s = plan.stages.at(stage);
  if (s.inputs.size() != 1) throw std::logic_error("erase_stage: the stage must have exactly one input");
  const int replacement = s.inputs[0];
  plan.stages.erase(plan.stages.begin() + stage);
  for (Stage& t : plan.stages)
    for (int& in : t.inputs) {
      if (in == stage) in = replacement;
      else if (in > stage) --in;
    }
}

int insert_stage_after(Plan& plan, int stage, Stage s) {
  const int at = stage + 1;
  for (Stage& t : plan.stages)
    for (int& in : t.inputs) {
      if (in == stage) in = at;  // read the new stage (fixed up below for the new stage itself)
      else if (in > stage) ++in;
    }
  s.inputs = {stage};
  plan.stages.insert(plan.stages.begin() + at, std::move(s));
  return at;
}

bool is_tolerant(const Plan& plan, int stage) {
  for (int c : consumers(plan, stage))
    if (plan.stages[c].kind == StageKind::IgnoreErrors || is_tolerant(plan, c)) return true;
  return false;
}

bool upstream_any(const Plan& plan, int stage, const std::function<bool(const Stage&)>& pred) {
  const Stage& s = plan.stages.at(stage);
  if (pred(s)) return true;
  for (int in : s.inputs)
    if (upstream_any(plan, in, pred)) return true;
  return false;
}

bool random_keys_from(const Plan& plan, int first) {
  auto flag = [](const Stage& s, const char* name) {
    const Value* v = s.arg(name);
    return v && v->kind == Value::Bool && v->b;
  };
  for (size_t i = static_cast<size_t>(std::max(first, 0)); i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    switch (s.kind) {
      case StageKind::Shuffle:
      case StageKind::ShuffleRepeat: return true;
      case StageKind::Files:
      case StageKind::ListFiles:
        if (flag(s, "shuffle")) return true;
        break;
      case StageKind::Tfrecord:
        if (flag(s, "shuffle_files")) return true;
        break;
      default: break;
    }
  }
  return false;
}

bool has_random_ops(const ExprFunction& fn) {
  for (const Instr& in : fn.body)
    // A cropping decode (crop pushdown) draws its window by the crop's op_id without being a random op.
    if (op_has(in.op, OpFlag::Random) || in.attrs.count("op_id")) return true;
  return false;
}

int map_before_batch(const Plan& plan, int batch) {
  const Stage& b = plan.stages.at(batch);
  if (b.kind != StageKind::Batch || b.inputs.size() != 1 || !b.arg("size") || b.arg("size")->kind != Value::Int)
    return -1;
  const int m = b.inputs[0];
  const Stage& map = plan.stages[m];
  if (map.kind != StageKind::Map || !map.fn || map.arg("per_row") || map.inputs.size() != 1) return -1;
  if (map.element.batch_rank != 0 || plan.stages[map.inputs[0]].element.batch_rank != 0) return -1;
  if (consumers(plan, m).size() != 1 || is_tolerant(plan, m)) return -1;
  return m;
}

bool fixed_shapes(const std::vector<Field>& fields) {
  for (const Field& f : fields)
    if (!f.type || !f.type->is_tensor() || !f.type->fully_known()) return false;
  return true;
}

void clone_functions(Plan& plan) {
  for (Stage& s : plan.stages)
    if (s.fn) s.fn = std::make_shared<ExprFunction>(*s.fn);
}

bool rewrite_functions(Plan& plan, const std::function<bool(ExprFunction&)>& rewrite) {
  bool changed = false;
  for (Stage& s : plan.stages) {
    if (!s.fn || s.native) continue;  // compiled code is tied to the function it was made from
    changed = rewrite(*s.fn) || changed;
  }
  return changed;
}

}  // namespace pipec

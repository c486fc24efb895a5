#include "compiler/passes/noop_elimination.h"

#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

int64_t int_arg(const Stage& s, const char* name, int64_t fallback) {
  const Value* v = s.arg(name);
  return v && v->kind == Value::Int ? v->i : fallback;
}

bool const_true(const ExprFunction& fn, int id) {
  const Instr& in = fn.body[static_cast<size_t>(id)];
  if (in.op != OpKind::Const || !in.type.is_scalar()) return false;
  const Value& v = in.attrs.at("value");
  return v.is_number() && v.as_double() != 0;
}

// A map whose results are its parameters, field for field, under the same names and types.
bool identity_map(const Plan& plan, const Stage& s) {
  const ElementInfo& in = plan.stages[s.inputs[0]].element;
  const ExprFunction& fn = *s.fn;
  if (fn.results.size() != in.fields.size() || s.element.fields.size() != in.fields.size()) return false;
  if (in.batch_rank != s.element.batch_rank || !s.args.empty()) return false;
  for (size_t k = 0; k < in.fields.size(); ++k) {
    const auto& [name, id] = fn.results[k];
    const Instr& p = fn.body[static_cast<size_t>(id)];
    const Type& t = *in.fields[k].type;
    if (name != in.fields[k].name || p.op != OpKind::Param || p.attrs.at("field").s != name) return false;
    // A u8 field may be a fixed-length byte string that reading converts into a u8 tensor.
    if (t.dtype == DType::U8 || t != *s.element.fields[k].type) return false;
  }
  return true;
}

bool is_noop(const Plan& plan, int i) {
  const Stage& s = plan.stages[i];
  if (s.inputs.size() != 1) return false;
  switch (s.kind) {
    case StageKind::Repeat: return int_arg(s, "count", -1) == 1;
    case StageKind::Skip: return int_arg(s, "count", -1) == 0;
    case StageKind::Take: return s.arg("count") && int_arg(s, "count", 0) < 0;
    case StageKind::Shard: return int_arg(s, "num_shards", 0) == 1 && int_arg(s, "index", -1) == 0;
    case StageKind::Filter: return s.fn && !s.native && const_true(*s.fn, s.fn->results.at(0).second);
    case StageKind::Map: return s.fn && !s.native && identity_map(plan, s);
    case StageKind::Prefetch: {
      // Of two prefetches in a row the later one (the one the user sized last) stays.
      auto readers = consumers(plan, i);
      return readers.size() == 1 && plan.stages[readers[0]].kind == StageKind::Prefetch;
    }
    default: return false;
  }
}

}  // namespace

bool noop_elimination(Plan& plan) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size());) {
    // The output stage's element is what the consumer sees; a noop there has the same element, so
    // it can go as well, but a plan keeps at least one stage.
    const bool last = i + 1 == static_cast<int>(plan.stages.size());
    if (plan.stages.size() > 1 && is_noop(plan, i) && (!last || plan.stages[i].inputs[0] == i - 1) &&
        !random_keys_from(plan, i + 1)) {
      erase_stage(plan, i);
      changed = true;
    } else {
      ++i;
    }
  }
  return changed;
}

}  // namespace pipec

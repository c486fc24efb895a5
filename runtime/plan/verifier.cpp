// IR invariants, checked after lowering and after every pass.
#include <fmt/format.h>

#include "runtime/plan/plan.h"

namespace pipec {

std::vector<std::string> verify_function(const ExprFunction& fn) {
  std::vector<std::string> errs;
  bool params_done = false;
  for (size_t i = 0; i < fn.body.size(); ++i) {
    const Instr& in = fn.body[i];
    auto err = [&](const std::string& m) {
      errs.push_back(fmt::format("{}: %{} = {}: {}", fn.name, i, op_name(in.op), m));
    };
    const OpInfo& info = op_info(in.op);
    if (info.has(OpFlag::Input)) {
      if (params_done) err("parameters must come first");
      if (!in.attrs.count("field")) err("a param needs its field name");
    } else {
      params_done = true;
    }
    if (info.has(OpFlag::Constant) && !in.attrs.count("value")) err("a const needs a value");
    if (in.op == OpKind::Cast && !in.attrs.count("dtype")) err("a cast needs a dtype");
    if (!in.type.is_tensor()) err("every value must be a tensor");
    const int n = static_cast<int>(in.operands.size());
    if (n < info.min_operands || (info.max_operands != kVariadic && n > info.max_operands)) {
      std::string want = info.max_operands == kVariadic ? fmt::format("at least {}", info.min_operands)
                         : info.min_operands == info.max_operands
                             ? std::to_string(info.min_operands)
                             : fmt::format("{} to {}", info.min_operands, info.max_operands);
      err(fmt::format("takes {} operands, not {}", want, n));
    }
    for (int o : in.operands)
      if (o < 0 || static_cast<size_t>(o) >= i) err(fmt::format("operand %{} is not defined before use", o));
    // Indices and slice bounds computed at run time: integer scalars after the indexed value; a
    // dynamic_slice has one operand per bound its attributes leave out.
    if (in.op == OpKind::DynamicIndex || in.op == OpKind::DynamicSlice) {
      if (!in.attrs.count("axis")) err("needs an axis");
      for (int k = 1; k < n; ++k) {
        const int o = in.operands[static_cast<size_t>(k)];
        if (o < 0 || static_cast<size_t>(o) >= i) continue;
        const Type& t = fn.body[static_cast<size_t>(o)].type;
        if (!t.is_scalar() || !is_integer(t.dtype))
          err(fmt::format("operand %{} must be an integer scalar, not {}", o, type_to_string(t)));
      }
      if (in.op == OpKind::DynamicSlice) {
        int left_out = 0;
        for (const char* b : {"start", "stop", "step"}) left_out += in.attrs.count(b) ? 0 : 1;
        if (left_out != n - 1)
          err(fmt::format("{} bounds are operands, but it has {} operands after the sliced one", left_out, n - 1));
      }
    }
    // Binary arithmetic, comparisons and and/or see operands of one dtype (lowering inserts the casts).
    const bool arithmetic = info.has(OpFlag::Arithmetic);
    if ((arithmetic || info.has(OpFlag::Compare) || info.has(OpFlag::Logic)) && n == 2) {
      int a = in.operands[0], b = in.operands[1];
      if (a >= 0 && b >= 0 && static_cast<size_t>(a) < i && static_cast<size_t>(b) < i &&
          fn.body[a].type.dtype != fn.body[b].type.dtype)
        err(fmt::format("operands have different dtypes ({} and {})", dtype_name(fn.body[a].type.dtype),
                        dtype_name(fn.body[b].type.dtype)));
      // True division's result is its float type, whatever the operands were.
      if (arithmetic && a >= 0 && static_cast<size_t>(a) < i && in.type.dtype != fn.body[a].type.dtype &&
          in.op != OpKind::Div)
        err("the result dtype differs from the operands'");
    }
  }
  if (fn.results.empty()) errs.push_back(fn.name + ": the function returns nothing");
  for (const auto& [name, id] : fn.results)
    if (id < 0 || static_cast<size_t>(id) >= fn.body.size())
      errs.push_back(fmt::format("{}: result `{}` refers to undefined %{}", fn.name, name, id));
  return errs;
}

std::vector<std::string> verify_plan(const Plan& plan) {
  std::vector<std::string> errs;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    auto err = [&](const std::string& m) { errs.push_back(fmt::format("stage #{} {}: {}", i, stage_name(s.kind), m)); };
    const StageInfo& info = stage_info(s.kind);
    for (int in : s.inputs)
      if (in < 0 || static_cast<size_t>(in) >= i) err(fmt::format("input #{} is not an earlier stage", in));
    const bool is_source = info.has(StageFlag::Source);
    if (is_source && !info.has(StageFlag::MultiInput) && !s.inputs.empty()) err("a source takes no input stage");
    if (!is_source && s.inputs.size() != 1) err("a stage takes exactly one input");
    if (info.has(StageFlag::Function) && !s.fn) err("needs a function");
    if ((s.kind == StageKind::FlatMap) != (s.inner != nullptr)) err("a flat_map, and only it, has an inner pipeline");
    if (s.inner) {
      for (auto& e : verify_plan(*s.inner)) err("inner pipeline: " + e);
      if (!s.inner->stages.empty()) {
        const ElementInfo& e = s.inner->stages.back().element;
        bool same = e.fields.size() == s.element.fields.size() && e.batch_rank == s.element.batch_rank;
        for (size_t k = 0; same && k < e.fields.size(); ++k)
          same = e.fields[k].name == s.element.fields[k].name && *e.fields[k].type == *s.element.fields[k].type;
        if (!same) err("its element is not its inner pipeline's");
      }
      if (const Value* bind = s.arg("bind"))
        for (const Value& b : bind->items)
          if (b.kind != Value::List || b.items.size() != 3 || b.items[0].i < 0 ||
              static_cast<size_t>(b.items[0].i) >= s.inner->stages.size())
            err("a binding names no stage of its inner pipeline");
    }
    if (s.fn) {
      for (auto& e : verify_function(*s.fn)) errs.push_back(e);
      // map: one result per field. map_filter (a map fused with the filter after it): the same, then
      // the keep flag. A map with per_row = n runs per element after a batch: each field is its result
      // with the batch dimension in front; so is each field of map_batch (a map and the batch after it).
      const Value* per_row = s.arg("per_row");
      if (per_row &&
          (s.kind != StageKind::Map || per_row->kind != Value::Int || per_row->i < 1 || s.element.batch_rank < 1))
        err("per_row needs a map after a batch and a positive batch size");
      const bool map_filter = s.kind == StageKind::MapFilter;
      const bool per_element_results = per_row || s.kind == StageKind::MapBatch;
      if (s.kind == StageKind::Map || map_filter || s.kind == StageKind::MapBatch) {
        size_t nfields = s.fn->results.size() - (map_filter ? 1 : 0);
        if (map_filter && (s.fn->results.empty() || s.fn->results.back().first != "keep"))
          err("a map_filter function ends with its keep flag");
        else if (nfields != s.element.fields.size()) {
          err("the function's results do not match the element's fields");
        } else {
          for (size_t k = 0; k < nfields; ++k) {
            const auto& [name, id] = s.fn->results[k];
            const Field& f = s.element.fields[k];
            std::vector<int64_t> want = f.type->shape;
            if (per_element_results && !want.empty()) want.erase(want.begin());
            if (name != f.name) err(fmt::format("result `{}` should be field `{}`", name, f.name));
            else if (id >= 0 && static_cast<size_t>(id) < s.fn->body.size() &&
                     (s.fn->body[id].type.dtype != f.type->dtype || s.fn->body[id].type.shape != want))
              err(fmt::format("result `{}` is {} but the element says {}{}", name, type_to_string(s.fn->body[id].type),
                              type_to_string(*f.type), per_element_results ? " (per row)" : ""));
          }
        }
      }
    }
  }
  if (plan.stages.empty()) errs.push_back("the plan has no stages");
  return errs;
}

}  // namespace pipec

#include "compiler/passes/map_batch_fusion.h"

#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

bool fixed_numeric(const std::vector<Field>& fields) {
  for (const Field& f : fields)
    if (!f.type || !f.type->is_tensor() || !f.type->fully_known() || f.type->dtype == DType::Bytes) return false;
  return !fields.empty();
}

bool fusible(const Plan& plan, int batch) {
  const Stage& b = plan.stages[batch];
  if (b.op != "batch" || b.inputs.size() != 1 || !b.arg("size") || b.arg("size")->kind != Value::Int) return false;
  const int m = b.inputs[0];
  const Stage& map = plan.stages[m];
  if (map.op != "map" || !map.fn || map.arg("per_row") || map.inputs.size() != 1) return false;
  if (map.element.batch_rank != 0 || map.element.on_gpu || plan.stages[map.inputs[0]].element.on_gpu) return false;
  if (!fixed_numeric(map.element.fields)) return false;
  return consumers(plan, m).size() == 1 && !is_tolerant(plan, m);
}

}  // namespace

bool map_batch_fusion(Plan& plan) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    if (!fusible(plan, i)) continue;
    // The batch takes the map's function and input; the map goes. Each stage's index is unchanged
    // but for those after the map, which move up by one: a later shuffle would draw differently.
    const int m = plan.stages[i].inputs[0];
    if (random_keys_from(plan, m + 1)) continue;
    Stage& batch = plan.stages[i];
    const Stage& map = plan.stages[m];
    batch.op = "map_batch";
    batch.fn = map.fn;
    batch.native = map.native;
    batch.loc = map.loc;
    for (const auto& arg : map.args) batch.args.push_back(arg);
    batch.inputs = map.inputs;
    erase_stage(plan, m);
    --i;  // the fused stage moved up to i - 1; look at what is now at i next
    changed = true;
  }
  return changed;
}

}  // namespace pipec

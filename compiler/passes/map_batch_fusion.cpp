#include "compiler/passes/map_batch_fusion.h"

#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

// The map's index, or -1 when the pair cannot be fused.
int fusible(const Plan& plan, int batch) {
  const int m = map_before_batch(plan, batch);
  if (m < 0) return -1;
  const Stage& map = plan.stages[m];
  if (map.element.on_gpu || plan.stages[map.inputs[0]].element.on_gpu) return -1;
  // The workers copy results into the batch byte for byte: fixed shapes, no byte strings.
  if (map.element.fields.empty() || !fixed_shapes(map.element.fields)) return -1;
  for (const Field& f : map.element.fields)
    if (f.type->dtype == DType::Bytes) return -1;
  return m;
}

}  // namespace

bool map_batch_fusion(Plan& plan) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const int m = fusible(plan, i);
    // The batch takes the map's function and input; the map goes. Each stage's index is unchanged
    // but for those after the map, which move up by one: a later shuffle would draw differently.
    if (m < 0 || random_keys_from(plan, m + 1)) continue;
    Stage& batch = plan.stages[i];
    const Stage& map = plan.stages[m];
    batch.kind = StageKind::MapBatch;
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

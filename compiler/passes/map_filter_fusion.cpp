#include "compiler/passes/map_filter_fusion.h"

#include "compiler/passes/function_edit.h"
#include "compiler/passes/plan_edit.h"

namespace pipec {

bool map_filter_fusion(Plan& plan) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    Stage& filter = plan.stages[i];
    if (filter.kind != StageKind::Filter || !filter.fn || filter.native || filter.inputs.size() != 1) continue;
    const int j = filter.inputs[0];
    Stage& map = plan.stages[j];
    if (map.kind != StageKind::Map || !map.fn || map.native || !map.args.empty() || !filter.args.empty()) continue;
    if (consumers(plan, j).size() != 1 || is_tolerant(plan, j) || random_keys_from(plan, i + 1)) continue;
    // A map after to(gpu) gets a CUDA kernel (attach_gpu_kernels), which computes the same number of
    // rows it reads; a fused map_filter would run on the CPU instead (as map_batch_fusion refuses it).
    if (map.element.on_gpu || plan.stages[map.inputs.at(0)].element.on_gpu) continue;
    // f's results, then the keep flag p computes from them.
    auto fused = compose_functions(*map.fn, *filter.fn);
    auto keep = fused->results.at(0);
    fused->results = map.fn->results;
    fused->results.push_back(keep);
    map.kind = StageKind::MapFilter;
    map.fn = fused;
    map.element = filter.element;
    erase_stage(plan, i);
    changed = true;
  }
  return changed;
}

}  // namespace pipec

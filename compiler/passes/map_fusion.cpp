#include "compiler/passes/map_fusion.h"

#include "compiler/passes/function_edit.h"
#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

bool same_args(const Stage& a, const Stage& b) {
  if (a.args.size() != b.args.size()) return false;
  for (size_t k = 0; k < a.args.size(); ++k)
    if (a.args[k].first != b.args[k].first || !same_value(a.args[k].second, b.args[k].second)) return false;
  return true;
}

}  // namespace

bool map_fusion(Plan& plan) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    Stage& second = plan.stages[i];
    if (second.kind != StageKind::Map || !second.fn || second.native || second.inputs.size() != 1) continue;
    const int j = second.inputs[0];
    Stage& first = plan.stages[j];
    if (first.kind != StageKind::Map || !first.fn || first.native || consumers(plan, j).size() != 1) continue;
    if (!same_args(first, second) || is_tolerant(plan, j) || random_keys_from(plan, i + 1)) continue;
    first.fn = compose_functions(*first.fn, *second.fn);
    first.element = second.element;
    erase_stage(plan, i);
    changed = true;
    i = j - 1;  // the fused map may fuse with the next one too
  }
  return changed;
}

}  // namespace pipec

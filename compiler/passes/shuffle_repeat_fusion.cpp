#include "compiler/passes/shuffle_repeat_fusion.h"

#include "compiler/passes/plan_edit.h"

namespace pipec {

bool shuffle_repeat_fusion(Plan& plan) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    const Stage& repeat = plan.stages[i];
    if (repeat.kind != StageKind::Repeat || repeat.inputs.size() != 1) continue;
    const int j = repeat.inputs[0];
    Stage& shuffle = plan.stages[j];
    if (shuffle.kind != StageKind::Shuffle || consumers(plan, j).size() != 1 || random_keys_from(plan, i + 1)) continue;
    shuffle.kind = StageKind::ShuffleRepeat;
    if (const Value* count = repeat.arg("count")) shuffle.args.push_back({"count", *count});
    shuffle.element = repeat.element;
    erase_stage(plan, i);
    --i;  // look at what moved into place i next
    changed = true;
  }
  return changed;
}

}  // namespace pipec

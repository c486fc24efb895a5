#include "compiler/passes/prefetch_injection.h"

#include "compiler/passes/plan_edit.h"

namespace pipec {

bool prefetch_injection(Plan& plan) {
  if (plan.stages.empty()) return false;
  const int last = static_cast<int>(plan.stages.size()) - 1;
  const Stage& out = plan.stages[last];
  if (out.kind == StageKind::Prefetch || out.element.is_sink) return false;
  Stage p;
  p.kind = StageKind::Prefetch;
  p.args = {{"size", Value::make_symbol("auto")}};
  p.element = out.element;
  p.loc = out.loc;  // errors a prefetch reports belong to the stage it follows
  insert_stage_after(plan, last, std::move(p));
  return true;
}

}  // namespace pipec

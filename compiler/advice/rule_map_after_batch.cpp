// Rule `map_after_batch` (seed 002: "the cost of calling the function per element dominates; vectorize
// the map and move it after batch()", the accepted answer): a map still running before a batch in the
// plan that ran, doing a real share of the work, could run after it on whole batches, as the
// optimizer's vectorize_map_after_batch does when it may. The sentence says why it did not and what
// to change: a repeat before a map that draws random numbers can move after the batch; a plan run
// without every pass gets it back with them. Maps whose fields have shapes known only at run time
// cannot move (a batch of them is not dense): nothing is said.
#include <fmt/format.h>

#include "compiler/advice/facts.h"
#include "compiler/advice/rules.h"
#include "compiler/passes/plan_edit.h"
#include "compiler/passes/vectorize_map_after_batch.h"

namespace pipec {

namespace {

constexpr double kMinShare = 0.2;

}  // namespace

void advise_map_after_batch(const RunFacts& f, std::vector<Advice>& out) {
  const Plan& plan = *f.plan;
  for (int b = 0; b < static_cast<int>(plan.stages.size()); ++b) {
    const int m = map_before_batch(plan, b);
    if (m < 0 || work_share(f, m) < kMinShare) continue;
    const Stage& map = plan.stages[m];
    if (!fixed_shapes(plan.stages[map.inputs[0]].element.fields) || !fixed_shapes(map.element.fields)) continue;
    const std::string why = vectorize_refusal(plan, b);
    std::string action;
    if (why.empty())
      action = f.all_passes ? "the optimizer left it where it was"
                            : "run with every optimizer pass (no -O0 or --disable-pass) and it moves";
    else if (why.find("repeat") != std::string::npos)
      action = "it stays because " + why + ": put the repeat after the batch and the optimizer moves it";
    else continue;
    out.push_back({"", m,
                   fmt::format("{} runs on elements before {} and is {} of the work; after the batch it would run on "
                               "whole batches of {} (batch | map): {}",
                               stage_label(plan, m), stage_label(plan, b), percent(work_share(f, m)),
                               plan.stages[b].arg("size")->i, action)});
  }
}

}  // namespace pipec

// Rule `parallel_map` (seed 003: num_parallel_calls=AUTOTUNE on every map): the stage that limits the
// run is a map whose `parallel = N` from the spec is below the run's threads; `parallel = auto` lets
// the autotuner give it up to every thread (and memory for the chunks in flight, within the budget).
#include <fmt/format.h>

#include "compiler/advice/facts.h"
#include "compiler/advice/rules.h"

namespace pipec {

void advise_parallel_map(const RunFacts& f, std::vector<Advice>& out) {
  if (!fixed_parallel_limits(f)) return;
  const int x = f.bottleneck.stage;
  const int64_t p = fixed_parallel(f.plan->stages[x]);
  const std::string where = p == 1 ? std::string("runs on the thread that pulls from it")
                                   : fmt::format("keeps {} of the run's {} threads on it", p, f.threads);
  out.push_back(
      {"", x,
       fmt::format("{} limits the run ({} of the work) and its parallel = {} {}: write parallel = auto, and the "
                   "autotuner runs it on up to {} threads",
                   stage_label(*f.plan, x), percent(work_share(f, x)), p, where, f.threads)});
}

}  // namespace pipec

// Rule `input_wait` (seed 003: "you want your GPUs to be running at 100% speed ... identify if your GPU
// is stalled at some point for lack of data"): in a training run, the share of each step the model
// spent waiting for the pipeline's next batch. From kShare of it on, the sentence says so with the
// time per step, and what the pipeline's model makes of it: a stage that limits the pipeline (named,
// as its bottleneck line names it; the other rules say what to do about it), or, when the pipeline
// makes batches faster than the model takes them, the hand-off between the threads, which only a
// deeper buffer or larger (fewer) batches hide. Below kShare the compute limits training and nothing
// is said.
#include <fmt/format.h>

#include "compiler/advice/facts.h"
#include "compiler/advice/rules.h"

namespace pipec {

namespace {

constexpr double kShare = 0.1;

}  // namespace

void advise_input_wait(const RunFacts& f, std::vector<Advice>& out) {
  if (!f.training || f.training->steps <= 0 || f.training->seconds <= 0) return;
  const RunFacts::Training& t = *f.training;
  const double share = t.input_wait_seconds / t.seconds;
  if (share < kShare) return;
  const double per_step_ms = 1e3 * t.seconds / static_cast<double>(t.steps);
  const double wait_ms = 1e3 * t.input_wait_seconds / static_cast<double>(t.steps);
  const std::string evidence = fmt::format("the model waits for input {} of each step ({:.3g} ms of {:.3g} ms)",
                                           percent(share), wait_ms, per_step_ms);
  const int b = f.bottleneck.stage;
  std::string text;
  if (f.bottleneck.kind == Bottleneck::Kind::Consumer)
    text = evidence +
           ": the pipeline makes batches faster than the model takes them, so the wait is the hand-off "
           "between their threads: larger batches, or a deeper prefetch(N) at the end of the pipeline, hide it";
  else if (b >= 0 && b < static_cast<int>(f.plan->stages.size()))
    text =
        fmt::format("{}: the input pipeline limits training; {} limits the pipeline ({} of its work): make it faster",
                    evidence, stage_label(*f.plan, b), percent(f.bottleneck.share));
  else text = evidence + ": the input pipeline limits training: make it faster";
  out.push_back({"", -1, text});
}

}  // namespace pipec

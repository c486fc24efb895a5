// Rule `bottleneck`: what to do about the stage that limits the run (the autotuner's model names it,
// and why), one sentence per kind of limit:
//  - a thread: the stage shares a thread with others -> a prefetch(auto) between them gives the larger
//    side a thread of its own; alone -> only less work helps;
//  - a map's window the tuner sized -> what stopped it (its line);
//  - reading files -> more files at once (interleave), which changes the order;
//  - the CPU -> more threads when the run has fewer than the machine's cores; a stage after to(gpu)
//    that ran on the CPU for want of a GPU -> a machine with one; else less work (cache it, see
//    cache_after_expensive) or the GPU;
//  - the consumer -> nothing in the pipeline.
// A map that limits the run because the spec fixed its parallel is rule parallel_map's.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/advice/facts.h"
#include "compiler/advice/rules.h"

namespace pipec {

namespace {

// A prefetch(auto) on the side of `stage` that takes the larger part of its thread's other work off it.
std::string split_thread(const RunFacts& f, int stage) {
  const Plan& plan = *f.plan;
  const std::vector<int> thread = threads_of(plan);
  const std::vector<int> up = upstream_of(plan, stage);
  double before = 0, after = 0;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    if (static_cast<int>(i) == stage || thread[i] != thread[stage]) continue;
    const bool upstream = std::find(up.begin(), up.end(), static_cast<int>(i)) != up.end();
    (upstream ? before : after) += f.stages[i].thread_seconds;
  }
  const Stage& s = plan.stages[stage];
  if (before >= after && !s.inputs.empty())
    return fmt::format("add prefetch(auto) before it (after {}), so the stages before it run on a thread of their own",
                       stage_label(plan, s.inputs[0]));
  return "add prefetch(auto) after it, so it runs on a thread of its own";
}

// A to(gpu) comes before the stage.
bool after_to_gpu(const Plan& plan, int stage) {
  for (int u : upstream_of(plan, stage)) {
    const Stage& s = plan.stages[u];
    const Value* d = s.arg("device");
    if (s.kind == StageKind::To && d && d->s == "gpu") return true;
  }
  return false;
}

}  // namespace

void advise_bottleneck(const RunFacts& f, std::vector<Advice>& out) {
  const Bottleneck& b = f.bottleneck;
  const Plan& plan = *f.plan;
  if (b.kind == Bottleneck::Kind::None || fixed_parallel_limits(f)) return;
  if (b.kind == Bottleneck::Kind::Consumer) {
    out.push_back(
        {"", -1,
         "the consumer takes longer per element than the pipeline makes one: nothing in the pipeline limits the run"});
    return;
  }
  const int x = b.stage;
  const std::string head =
      fmt::format("{} limits the run ({} of the work; {})", stage_label(plan, x), percent(b.share), b.why);
  std::string action;
  switch (b.kind) {
    case Bottleneck::Kind::Segment:
      if (b.why.find(" with ") != std::string::npos) action = split_thread(f, x);
      else action = "it has its thread to itself, so only less work in it makes the run faster";
      break;
    case Bottleneck::Kind::Map:
      action = "the autotuner's line for it says what kept it from more chunks in flight";
      break;
    case Bottleneck::Kind::Reader:
      action =
          "read more files at once: interleave(cycle_length = N) after the source (the order of the records changes)";
      break;
    case Bottleneck::Kind::Cpu:
      if (f.threads < f.cores)
        action = fmt::format("the run has {} of the machine's {} cores: run it with --threads {}", f.threads, f.cores,
                             f.cores);
      else if (!f.gpu && after_to_gpu(plan, x))
        action =
            "every core is busy, and it comes after to(gpu) but ran on the CPU for want of a GPU: on a machine with "
            "one it "
            "moves there";
      else
        action = "every core is busy: only less work helps (cache what repeats, or move maps to the GPU with to(gpu))";
      break;
    default: return;
  }
  out.push_back({"", x, head + ": " + action});
}

}  // namespace pipec

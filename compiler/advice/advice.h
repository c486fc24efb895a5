// Advice after a run: what limits the pipeline and what to change, from rules that each carry one
// lesson of the seeds (the workloads pipec was built for; docs/performance.md, "Advice") and state the
// evidence the run measured. One rule per file (rule_*.cpp), every rule registered once in
// advice_rules.def; `pipec run` prints what they say under its summary and `--stats-json` lists it.
//
// The rules read facts, not the run itself (RunFacts below), so a test can hand them any plan and any
// measurements and check the sentence each one says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/exec/autotune_model.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// What one stage did over the run.
struct StageFacts {
  double work_seconds = 0;    // all its work, on the thread that pulls from it and on threads of its own
  double thread_seconds = 0;  // the part on the thread that pulls from it (its share of that thread)
  uint64_t elements_out = 0;  // elements (batches after a batch) it produced
  uint64_t bytes_out = 0;     // bytes of those elements
};

struct RunFacts {
  const Plan* plan = nullptr;                         // the plan that ran (after the optimizer)
  std::vector<StageFacts> stages;                     // by plan index
  std::vector<std::optional<int64_t>> pass_elements;  // elements in one pass of each stage, when known
  Bottleneck bottleneck;                              // by the autotuner's model over the whole run
  int threads = 1;                                    // the run's threads
  int cores = 1;                                      // the machine's
  uint64_t memory_budget = 0;                         // bytes
  bool all_passes = true;                             // the optimizer ran every pass (no -O0, no --disable-pass)
  bool gpu = false;                                   // the run had a GPU for the stages after to(gpu)

  /// A training run's steps, when the pipeline fed one (`pipec run` on a train block).
  struct Training {
    int64_t steps = 0;
    double seconds = 0;             // the whole loop
    double input_wait_seconds = 0;  // blocked on the pipeline's next batch
  };
  std::optional<Training> training;
};

struct Advice {
  std::string rule;  // the rule's name in advice_rules.def
  int stage = -1;    // the stage it is about; -1: the whole pipeline
  std::string text;  // one sentence: the evidence, then what to do
};

/// What every rule says about `facts`, in the order of advice_rules.def.
std::vector<Advice> advise(const RunFacts& facts);

/// The rules' names and lessons, in order (for the docs and the coverage test).
struct AdviceRuleInfo {
  const char* name;
  const char* lesson;  // the seed it comes from and what it taught
};
const std::vector<AdviceRuleInfo>& advice_rules();

}  // namespace pipec

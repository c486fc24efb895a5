// The parts of `pipec run`'s summary that come from the autotuner and the memory budget: the memory
// line, the bottleneck by the model, what each `auto` parameter was set to and why (and, with
// --explain-autotune, the model's inputs and every change the tuner made), and the same as JSON.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "runtime/exec/pipeline_run.h"

namespace pipec {

/// "  memory      21.3 MB at most in stage buffers (budget 8.4 GB)".
void print_memory_line(std::ostream& out, const PipelineRun& run);
/// "  bottleneck: #3 map (62% of the pipeline's work): the CPU: the pipeline's 2 threads are busy".
void print_bottleneck_line(std::ostream& out, const PipelineRun& run);
/// One line per tunable parameter: its value and the sentence saying why; `explain` adds the model's
/// inputs per stage and the tuner's changes over time.
void print_autotune(std::ostream& out, const PipelineRun& run, bool explain);

/// {"memory": {...}, "bottleneck": {...}, "autotune": [...]} members for --stats-json.
void add_autotune_json(nlohmann::ordered_json& j, const PipelineRun& run);

}  // namespace pipec

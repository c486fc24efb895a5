// The parts of `pipec run`'s summary that come from the autotuner and the memory budget: the memory
// line, the bottleneck by the model, what each `auto` parameter was set to and why (and, with
// --explain-autotune, the model's inputs and every change the tuner made), and the same as JSON.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "compiler/advice/advice.h"
#include "runtime/exec/pipeline_run.h"

namespace pipec {

/// "  memory      21.3 MB at most in stage buffers (budget 8.4 GB)".
void print_memory_line(std::ostream& out, const PipelineRun& run);
/// "  bottleneck: #3 map (62% of the pipeline's work): the CPU: the pipeline's 2 threads are busy".
void print_bottleneck_line(std::ostream& out, const PipelineRun& run);
/// One line per tunable parameter: its value and the sentence saying why; `explain` adds the model's
/// inputs per stage and the tuner's changes over time.
void print_autotune(std::ostream& out, const PipelineRun& run, bool explain);

/// What the advice rules read (compiler/advice/advice.h), from the run's statistics and model;
/// `all_passes`: the optimizer ran every pass.
RunFacts run_facts(const PipelineRun& run, bool all_passes);
/// "  advice:" and one line per piece of advice (nothing when there is none).
void print_advice(std::ostream& out, const std::vector<Advice>& advice);

/// {"memory": {...}, "bottleneck": {...}, "autotune": [...], "advice": [...]} members for --stats-json.
void add_autotune_json(nlohmann::ordered_json& j, const PipelineRun& run, const std::vector<Advice>& advice);

/// `--trace FILE` at the end of a pipeline or training run: stops the trace and writes it. Nothing to do
/// when `path` is empty; false, with the error printed, when the file cannot be written.
bool write_run_trace(const std::string& path);

}  // namespace pipec

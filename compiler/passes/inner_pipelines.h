// The optimizer on flat_map's inner pipelines (Stage::inner): each goes through the same passes as the
// plan that holds it, after that plan's own, and so on down for a flat_map inside one.
//
// Two things differ from a pipeline's passes. prefetch_injection is skipped: an inner pipeline runs on
// the thread that pulls its flat_map (runtime/exec/stages/stage_flat_map.cpp), and a prefetch would
// start a thread per element. And the stage's `bind` list names inner stages by index, so the stages
// it names are marked before the passes and renumbered after them; should a pass have removed, merged
// or copied one of them, the inner pipeline is kept as lowered (its own inner pipelines still optimized).
#pragma once

#include "compiler/passes/pass_pipeline.h"

namespace pipec {

/// Optimizes the inner pipeline of every flat_map of `plan` (recursively), with `options`' level and
/// disabled passes; `options.log` is not called for them.
void optimize_inner_pipelines(Plan& plan, const PassOptions& options);

}  // namespace pipec

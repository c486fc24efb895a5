// Plan pass `map_batch_fusion`: `map(f) | batch(n)` that vectorize_map_after_batch left in place (a repeat
// feeds a map with random ops, so one batch may hold two epochs) becomes one `map_batch` stage
// (runtime/exec/stages/stage_map_batch.cpp): the threads that run f copy its results straight into the
// batches, instead of handing result chunks back for the consumer thread to copy. The map still sees
// the chunks it saw before, so results and random draws are identical. Refuses unless every field
// the map produces is numeric with a fully known shape, the map is the batch's only input and has no
// other reader, the batch is a plain batch with a constant size, nothing downstream is ignore_errors,
// and the map runs on the CPU.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool map_batch_fusion(Plan& plan);

}  // namespace pipec

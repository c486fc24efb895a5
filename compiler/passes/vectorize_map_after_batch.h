// Plan pass `vectorize_map_after_batch`: `map(f) | batch(n)` becomes `batch(n) | map(f, per_row = n)`: the map
// runs once over whole batches (runtime/exec/stages/row_view.h) and keys row i of batch b as element b*n + i,
// the index it had before, so random ops agree, also for the final short batch and in every epoch.
// Refuses unless every field the map reads and writes has a fully known shape (no ragged fields), the
// map is the batch's only input and has no other reader, no repeat feeds a map that draws random
// numbers (a batch could then hold elements of two epochs, and the draws are keyed by epoch), and
// nothing downstream is ignore_errors.
#pragma once

#include <string>

#include "runtime/plan/plan.h"

namespace pipec {

/// Why the map before the `batch(n)` at `batch` may not move after it (a phrase, for the run's advice);
/// empty when it may. Compiled kernels aside: those the pass leaves alone, whatever this says.
std::string vectorize_refusal(const Plan& plan, int batch);

/// Rewrites `plan` in place; returns whether anything changed.
bool vectorize_map_after_batch(Plan& plan);

}  // namespace pipec

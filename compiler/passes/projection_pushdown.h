// Plan pass `projection_pushdown`: a field nobody reads is dropped as early as possible. Walking from
// the output back to the sources it works out which fields each stage must deliver; a map stops
// computing results nobody reads, a source stops parsing features nobody reads (its schema shrinks).
// The last stage keeps every field (the consumer reads them all); stages whose fields cannot be
// traced (zip, sinks, unknown stages) keep everything upstream of them.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool projection_pushdown(Plan& plan);

}  // namespace pipec

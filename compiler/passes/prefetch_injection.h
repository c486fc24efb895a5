// Plan pass `prefetch_injection`: a pipeline that does not end in prefetch gets `prefetch(auto)` at the end,
// so the consumer overlaps with the work that makes its next element. Not after a sink (write).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool prefetch_injection(Plan& plan);

}  // namespace pipec

// Plan pass `noop_elimination`: removes stages that pass every element through unchanged and keep
// element numbering: repeat(1), skip(0), take(n < 0), shard(1, 0), a filter whose predicate is the
// constant true, a map that returns its input fields unchanged (not when a field is u8, which may be a
// fixed-length byte string the map converts), and the first of two prefetch stages in a row. Not
// when a later stage keys its random stream by its index (a shuffle): removing would shift it.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool noop_elimination(Plan& plan);

}  // namespace pipec

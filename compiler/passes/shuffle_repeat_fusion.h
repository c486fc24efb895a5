// Plan pass `shuffle_repeat_fusion`: `shuffle(b, ...) | repeat(count)` becomes one `shuffle_repeat` stage
// (runtime/exec/stages/stage_shuffle.cpp) that moves on to the next epoch itself when its buffer drains, instead
// of a repeat destroying the shuffle and building a new one for every epoch. The output is identical:
// the fused stage keeps the shuffle's place in the plan (its stage index is part of its random keys)
// and numbers its elements across epochs as the repeat did. Refuses when the shuffle has other readers
// and when a later stage keys a random stream by its index (removing the repeat would shift it).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool shuffle_repeat_fusion(Plan& plan);

}  // namespace pipec

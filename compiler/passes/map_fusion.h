// Plan pass `map_fusion`: `map(f) | map(g)` becomes `map(g . f)`, one function that computes f's results
// and feeds them to g. Both maps see the same element indices, so random ops agree. Refuses when the
// first map has other readers, when the maps carry different arguments, before ignore_errors
// (which drops failing rows one stage at a time), and when a later stage keys its random stream by
// its index (a shuffle).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool map_fusion(Plan& plan);

}  // namespace pipec

// Plan pass `map_filter_fusion`: `map(f) | filter(p)` becomes one `map_filter` stage whose function computes
// f's fields and then p's keep flag; the runtime keeps the rows whose flag is set and numbers them
// like the filter did. The filter saw the map's element indices, so random ops agree. A filter before
// a map is not fused: the map would run on rows the filter drops (errors and random draws there would
// differ). Refuses when the map has other readers, before ignore_errors, when a later stage keys
// its random stream by its index (a shuffle), and after to(gpu) (the map keeps its CUDA kernel).
// The fused stage compiles like a map: its kernel writes the fields and the keep flag.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool map_filter_fusion(Plan& plan);

}  // namespace pipec

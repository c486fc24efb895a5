// One map function applied to one chunk: the compiled kernel when it fits, else the interpreter.
// Shared by map / filter (stage_map.cpp) and map_batch (stage_map_batch.cpp), so the two cannot
// disagree on which backend runs or on the seed the random ops see.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/exec/iterator.h"

namespace pipec {

/// The columns `stage.fn` computes from `in` (one per result). `in_fields` names in's columns.
/// With allow_native = false the interpreter runs even when a kernel exists (the reference for errors).
std::vector<Column> apply_stage_function(const RunContext& ctx, const Stage& stage,
                                         const std::vector<std::string>& in_fields, const Chunk& in, bool allow_native);

}  // namespace pipec

// Calling a stage's compiled kernel (Stage::native, runtime/plan/native_kernel.h) on a chunk.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// Runs `stage.native->fn` on `in` and fills `out` with one dense column per function result, as
/// run_function would. Returns false, doing nothing, when the chunk does not fit the kernel (a ragged
/// column, a dtype or element count other than the function's params have, no rows): the caller then
/// runs the interpreter, which also reports any data error in its own words. A nonzero kernel return
/// throws std::runtime_error naming the code.
bool run_native(const Stage& stage, const std::vector<std::string>& in_fields, const Chunk& in, uint64_t seed,
                std::vector<Column>& out);

}  // namespace pipec

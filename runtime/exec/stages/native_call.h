// Calling a stage's compiled kernel (Stage::native, runtime/plan/native_kernel.h) on a chunk.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// Runs `stage.native->fn` on `in` and fills `out` with one dense column per function result, as
/// run_function would. Returns false, doing nothing, when the chunk does not fit the kernel (a ragged
/// column, a dtype or element count other than the function's params have, no rows) or when the kernel
/// returns a nonzero code (a data error): the caller then runs the interpreter, the reference, which
/// reports the error in its own words (so errors, their messages and ignore_errors behave the same).
bool run_native(const Stage& stage, const std::vector<std::string>& in_fields, const Chunk& in, uint64_t seed,
                std::vector<Column>& out);

}  // namespace pipec

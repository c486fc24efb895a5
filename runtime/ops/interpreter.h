// The reference interpreter: runs a map/filter body (an ExprFunction) over a chunk, one kernel call per
// instruction per chunk. It is the semantics the LLVM JIT and the GPU kernels are checked against.
//
// Values are per-row tensors [rows, ...element] or row-invariant tensors [...element] (constants and
// whatever is computed only from constants are never materialised per row). Instructions with a
// ragged operand (a column whose rows have different shapes) run row by row. Results whose static type
// has unknown dims come back as ragged columns, all others as dense [rows, ...] columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/ops/kernel_error.h"
#include "runtime/plan/expr_function.h"

namespace pipec {

struct EvalContext {
  uint64_t seed = 0;     // the run seed: random ops without a `seed` attribute use it
  std::string spec_dir;  // relative paths read by image ops (read_file, decoders, colour CSVs)
};

/// Runs `fn` over every row of `in`. `in_fields` names in's columns (the element's field order); each
/// `param` instr reads the column of its field. Returns one Column per fn.results entry, rows = in.rows.
/// Throws KernelError (location, op and problem) on bad data, e.g. a ragged row whose size does not fit
/// a reshape, or an out-of-range gather on a ragged dim.
std::vector<Column> run_function(const ExprFunction& fn, const std::vector<std::string>& in_fields, const Chunk& in,
                                 const EvalContext& ctx);

}  // namespace pipec

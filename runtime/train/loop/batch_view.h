// Batches out of a data pipeline's chunks: a chunk of a batched pipeline holds rows that are whole
// batches; the training loop and the evaluator take them one at a time, fields by name.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/chunk.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// The column of field `name` (throws std::logic_error when the element has none: a compiler bug).
size_t field_index(const ElementInfo& e, const std::string& name);

/// Row `r` of a column of batches: one batch.
Tensor batch_of(const Column& col, int64_t rows, int64_t r);

}  // namespace pipec

// The per-row view of a chunk of batches, for maps that the optimizer moved after their batch
// (`map(f) | batch(n)` -> `batch(n) | map(f, per_row = n)`).
//
// A chunk of B batches has dense columns [B, k, ...] (k = n, or less for the final batch). The map
// runs its per-element function on the B*k element rows: columns [B*k, ...], a reshape, not a copy,
// so a compiled kernel sees one contiguous buffer per input. Row i of batch b keeps the element index
// it had before the move, b*n + i (first_index * n + i), and the chunk's epoch, so random ops draw
// the same values as when the map ran before the batch.
#pragma once

#include <cstdint>

#include "runtime/core/chunk.h"

namespace pipec {

/// The element rows of `batches` (every column dense [B, k, ...], one k for all). `batch_size` is the
/// batch's n: the element numbering of the rows is first_index * batch_size + i. Throws
/// std::runtime_error when the chunk is not such a chunk of batches.
Chunk batches_as_rows(const Chunk& batches, int64_t batch_size);

/// Folds per-row result columns ([B*k, ...], dense) back into B batches of k: [B, k, ...].
std::vector<Column> rows_as_batches(std::vector<Column> rows, int64_t batches);

}  // namespace pipec

// A chunk: a run of consecutive elements of a dataset, stored column by column.
//
// Stages pass chunks, not single elements, so every kernel runs once per op per chunk and hot loops
// never see one element behind a virtual call. A column holds one field for all rows:
//   - dense: one tensor of shape [rows, ...element shape] (a Bytes tensor [rows] for byte strings);
//   - ragged: one tensor per row, for fields whose shape varies from element to element (decoded
//     images, variable-length features).
// After batch(n) an element is a whole batch, so a chunk of batches has columns [rows, n, ...].
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec {

struct Column {
  bool ragged = false;
  Tensor dense;              // when !ragged: leading dimension = rows
  std::vector<Tensor> rows;  // when ragged: one tensor per row, each without the rows dimension
};

struct Chunk {
  int64_t rows = 0;
  std::vector<Column> columns;  // in the element's field order
  /// Index, within the epoch, of row 0 at the stage that produced the chunk. Random ops key their
  /// Philox streams by (seed, op, element index, epoch), so results do not depend on chunking or threads.
  int64_t first_index = 0;
  int64_t epoch = 0;
};

/// Row `r` of a column as a tensor of its own (a copy for dense columns), without the rows dimension.
Tensor column_row(const Column& col, int64_t r);

/// Bytes held by a chunk's tensors (for MB/s figures).
size_t chunk_bytes(const Chunk& c);

}  // namespace pipec

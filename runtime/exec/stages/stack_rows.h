// Stacking rows into one element whose fields lead with the row count: what batch makes of its rows,
// and window of each window.
#pragma once

#include <string_view>
#include <vector>

#include "runtime/core/chunk.h"

namespace pipec {

/// What the stacked element is called in errors ("batch"), and what to do instead ("use padded_batch").
struct StackNames {
  std::string_view noun;
  std::string_view fix;
};
inline constexpr StackNames kBatchStack{"batch", "use padded_batch"};

/// Adds a leading dimension of 1 to every column: a chunk of one element that is all of `rows`.
/// Throws std::runtime_error when a column is ragged (its rows cannot form one dense tensor).
Chunk as_single_element(Chunk rows, const StackNames& names = kBatchStack);

/// `c` with every ragged column whose rows agree in shape made dense. Throws std::runtime_error naming
/// both shapes when they differ.
Chunk densify(const Chunk& c, const StackNames& names = kBatchStack);

/// The rows of `pieces`, in order (`n` in all), as one element (as_single_element). Throws
/// std::runtime_error when rows of a column differ in shape.
Chunk stack_rows(const std::vector<Chunk>& pieces, int64_t n, const StackNames& names = kBatchStack);

/// Every row of `in` is a stacked element: its rows, in order, as one chunk (what unbatch yields).
/// Throws std::runtime_error when an element has no leading dimension.
Chunk unstack_rows(const Chunk& in);

}  // namespace pipec

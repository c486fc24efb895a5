// Padding rows of different shapes into one element: what padded_batch makes of each batch, and
// bucket_by_length and group_by_window of each padded batch they emit.
#pragma once

#include <vector>

#include "runtime/core/chunk.h"

namespace pipec {

/// The rows of `pieces`, in order (`n` in all), as one element whose fields lead with `n`: every row of
/// a field padded to the largest shape among them, numbers and bools with `padding`, byte strings with
/// empty strings (as tf.data's padded_batch pads). `fixed`, when not empty, holds one shape per field
/// (of the rows' rank): a dimension >= 0 there is the size to pad to instead of the largest
/// (bucket_by_length's pad_to_bucket_boundary). Throws std::runtime_error when rows of a field differ in
/// rank or a row is larger than its fixed size.
Chunk pad_rows(const std::vector<Chunk>& pieces, int64_t n, double padding, const std::vector<Shape>& fixed = {});

}  // namespace pipec

// Python/numpy slice bounds for one dimension: the one definition the interpreter and the code
// generators (loop nests, CUDA) share, so a slice means the same thing on every backend.
#pragma once

#include <cstdint>
#include <limits>

namespace pipec {

/// An omitted start, stop or step in a slice attribute.
inline constexpr int64_t kSliceNone = std::numeric_limits<int64_t>::min();

struct SliceBounds {
  int64_t start, len, step;
};

/// The elements `start:stop:step` selects from a dimension of size n, as Python does (negative bounds
/// count from the end, out-of-range bounds clamp, kSliceNone means omitted; any other step, however
/// large, is exact). Throws OpError when step is zero.
SliceBounds resolve_slice(int64_t start, int64_t stop, int64_t step, int64_t n);

}  // namespace pipec

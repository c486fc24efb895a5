// How a loop over [0, n) may be split: the one type the training code's element-by-element loops take
// (the optimizer's update, batch_norm's statistics, mixed precision's rounding), so that the reference
// executor runs them as one loop and the fast executor over its threads with the same code.
#pragma once

#include <cstdint>
#include <functional>

namespace pipec {

/// Runs body(begin, end) over parts of [0, n) that together cover it, in any order or in parallel.
using ParallelFor = std::function<void(int64_t n, const std::function<void(int64_t begin, int64_t end)>& body)>;

/// body over [0, n) split by `parallel`, or as one call when there is none (and n > 0).
inline void run_split(const ParallelFor& parallel, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  if (parallel) parallel(n, body);
  else if (n > 0) body(0, n);
}

}  // namespace pipec

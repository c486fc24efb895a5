// batch_norm's batch statistics in one pass over the data: per channel of a channels-last [rows,
// channels] tensor, the mean and the biased variance, in f64.
//
// The rows are cut into fixed blocks of kStatisticsBlock rows. Each block's mean and sum of squared
// deviations come from the block alone (its second look at the block reads the cache, not memory), and
// the blocks are merged in order by Chan et al.'s pairwise update, so the result
//   - reads the tensor from memory once (a two-pass mean then variance reads it twice),
//   - is as accurate as the two-pass formula (no sum-of-squares cancellation when |mean| >> deviation),
//   - does not depend on how the blocks are split between threads (bit for bit on any thread count).
// The reference executor runs it on one thread, the fast executor on its OpenMP threads.
#pragma once

#include <cstdint>

#include "runtime/core/parallel_for.h"

namespace pipec {

constexpr int64_t kStatisticsBlock = 256;

/// mean[c] and variance[c] (biased: divided by rows) of x[r * channels + c]; `parallel` null: one loop.
template <class T>
void batch_statistics(int64_t rows, int64_t channels, const T* x, double* mean, double* variance,
                      const ParallelFor& parallel = nullptr);

}  // namespace pipec

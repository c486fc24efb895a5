#include "runtime/ops/batch_statistics.h"

#include <algorithm>
#include <vector>

namespace pipec {

template <class T>
void batch_statistics(int64_t rows, int64_t channels, const T* x, double* mean, double* variance,
                      const ParallelFor& parallel) {
  const int64_t blocks = (rows + kStatisticsBlock - 1) / kStatisticsBlock;
  // Each block's mean and sum of squared deviations, [blocks][channels].
  std::vector<double> block_mean(static_cast<size_t>(blocks * channels)), block_m2(block_mean.size());
  auto run_blocks = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * kStatisticsBlock, r1 = std::min(rows, r0 + kStatisticsBlock);
      double* m = block_mean.data() + b * channels;
      double* m2 = block_m2.data() + b * channels;
      std::fill(m, m + channels, 0.0);
      std::fill(m2, m2 + channels, 0.0);
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * channels;
        for (int64_t c = 0; c < channels; ++c) m[c] += static_cast<double>(xr[c]);
      }
      const double inv = 1.0 / static_cast<double>(r1 - r0);
      for (int64_t c = 0; c < channels; ++c) m[c] *= inv;
      for (int64_t r = r0; r < r1; ++r) {  // the block again, from the cache
        const T* xr = x + r * channels;
        for (int64_t c = 0; c < channels; ++c) {
          const double d = static_cast<double>(xr[c]) - m[c];
          m2[c] += d * d;
        }
      }
    }
  };
  run_split(parallel, blocks, run_blocks);
  // Chan's merge, block after block: n_ab = n_a + n_b, delta = mean_b - mean_a,
  // mean_ab = mean_a + delta n_b / n_ab, M2_ab = M2_a + M2_b + delta^2 n_a n_b / n_ab.
  std::vector<double> m2(static_cast<size_t>(channels), 0.0);
  std::fill(mean, mean + channels, 0.0);
  double n_a = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const double n_b = static_cast<double>(std::min(rows, (b + 1) * kStatisticsBlock) - b * kStatisticsBlock);
    const double n_ab = n_a + n_b;
    const double* bm = block_mean.data() + b * channels;
    const double* bm2 = block_m2.data() + b * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double delta = bm[c] - mean[c];
      mean[c] += delta * (n_b / n_ab);
      m2[static_cast<size_t>(c)] += bm2[c] + delta * delta * (n_a * n_b / n_ab);
    }
    n_a = n_ab;
  }
  for (int64_t c = 0; c < channels; ++c) variance[c] = rows > 0 ? m2[static_cast<size_t>(c)] / rows : 0.0;
}

template void batch_statistics<float>(int64_t, int64_t, const float*, double*, double*, const ParallelFor&);
template void batch_statistics<double>(int64_t, int64_t, const double*, double*, double*, const ParallelFor&);

}  // namespace pipec

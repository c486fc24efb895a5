// batch_norm's one-pass batch statistics (runtime/ops/batch_statistics.h): as accurate as the two-pass
// formula where the sum-of-squares shortcut is not, and the same bit for bit however the blocks are
// split between threads.
#include "runtime/ops/batch_statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace pipec {
namespace {

// The two-pass formula in long double: the mean, then the mean squared deviation from it.
void two_pass(int64_t rows, int64_t channels, const std::vector<float>& x, std::vector<long double>& mean,
              std::vector<long double>& variance) {
  mean.assign(channels, 0);
  variance.assign(channels, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) mean[c] += x[r * channels + c];
  for (auto& m : mean) m /= rows;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c)
      variance[c] += (x[r * channels + c] - mean[c]) * (x[r * channels + c] - mean[c]);
  for (auto& v : variance) v /= rows;
}

// Values around a mean far larger than their spread (an activation with a large offset): the mean of
// the squares minus the squared mean would keep about 4 of the variance's 16 digits in f64 (1e4^2 over
// 1e-2^2 = 1e12) and fail the 1e-9 bound below; the blocks' deviations keep them. Row counts below, at
// and across the block size.
TEST(BatchStatistics, MatchesTheTwoPassFormulaWhereTheMeanDwarfsTheSpread) {
  for (int64_t rows : {int64_t{1}, int64_t{7}, kStatisticsBlock, 3 * kStatisticsBlock + 5, int64_t{5000}}) {
    for (int64_t channels : {1, 3, 64}) {
      std::mt19937 rng(static_cast<uint32_t>(rows * 131 + channels));
      std::normal_distribution<float> spread(0.0f, 0.01f);
      std::vector<float> x(static_cast<size_t>(rows * channels));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) x[r * channels + c] = 1e4f + 100.0f * c + spread(rng);
      std::vector<double> mean(channels), variance(channels);
      batch_statistics<float>(rows, channels, x.data(), mean.data(), variance.data());
      std::vector<long double> want_mean, want_variance;
      two_pass(rows, channels, x, want_mean, want_variance);
      for (int64_t c = 0; c < channels; ++c) {
        SCOPED_TRACE("rows " + std::to_string(rows) + ", channel " + std::to_string(c) + " of " +
                     std::to_string(channels));
        EXPECT_NEAR(mean[c], static_cast<double>(want_mean[c]), 1e-15 * std::abs(static_cast<double>(want_mean[c])));
        const double v = static_cast<double>(want_variance[c]);
        EXPECT_NEAR(variance[c], v, 1e-9 * v + 1e-30);
        if (rows > 1) {
          EXPECT_GT(variance[c], 0.0);
        }
      }
    }
  }
}

TEST(BatchStatistics, SameBitForBitOnAnySplitOfTheBlocks) {
  const int64_t rows = 10 * kStatisticsBlock + 17, channels = 24;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 5.0f);
  std::vector<float> x(static_cast<size_t>(rows * channels));
  for (float& v : x) v = u(rng);
  std::vector<double> mean1(channels), var1(channels), mean2(channels), var2(channels);
  batch_statistics<float>(rows, channels, x.data(), mean1.data(), var1.data());
  batch_statistics<float>(rows, channels, x.data(), mean2.data(), var2.data(),
                          [](int64_t n, const std::function<void(int64_t, int64_t)>& body) {
                            body(n / 3, n);  // the later blocks first, in uneven parts
                            body(1, n / 3);
                            body(0, 1);
                          });
  EXPECT_EQ(mean1, mean2);
  EXPECT_EQ(var1, var2);
}

}  // namespace
}  // namespace pipec

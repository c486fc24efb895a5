// TfSampleStream: the choices of tf.data's sample_from_datasets. The pinned sequences are what
// TensorFlow 2.21 yields for `sample_from_datasets([constant k repeated, ...], weights, seed)`; the
// conformance fixtures (sample_from_*) check whole pipelines against it.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "runtime/core/tf_sample_stream.h"

namespace pipec {
namespace {

std::vector<int64_t> first(const TfSampleStream& s, uint64_t n) {
  std::vector<int64_t> out;
  for (uint64_t i = 0; i < n; ++i) out.push_back(s.choice(i));
  return out;
}

TEST(TfSampleStream, EqualsTensorFlowsChoices) {
  EXPECT_EQ(first(TfSampleStream({0.3f, 0.7f}, 5), 24),
            (std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1}));
  EXPECT_EQ(first(TfSampleStream({1.0f, 2.0f, 3.0f}, 42), 24),
            (std::vector<int64_t>{2, 2, 2, 2, 1, 2, 1, 0, 0, 2, 2, 2, 1, 0, 1, 2, 2, 2, 2, 1, 2, 2, 2, 0}));
  // A seed beyond 31 bits is reduced as TensorFlow's get_seed reduces it.
  EXPECT_EQ(first(TfSampleStream({0.25f, 0.25f, 0.25f, 0.25f}, int64_t{1} << 40), 24),
            (std::vector<int64_t>{0, 0, 0, 1, 3, 1, 2, 2, 3, 2, 0, 2, 0, 3, 3, 3, 1, 1, 2, 3, 3, 1, 2, 0}));
}

TEST(TfSampleStream, SeedsAreReducedAsPythonsModulo) {
  EXPECT_EQ(TfSampleStream::truncated_seed(5), 5u);
  EXPECT_EQ(TfSampleStream::truncated_seed(2147483647), 0u);
  EXPECT_EQ(TfSampleStream::truncated_seed(-3), 2147483644u);
  EXPECT_EQ(TfSampleStream::truncated_seed(int64_t{1} << 40), static_cast<uint64_t>((int64_t{1} << 40) % 2147483647));
}

// Each choice is a function of its number alone (what a checkpoint relies on), and the choices follow
// the weights: 40000 draws of 0.1 / 0.6 / 0.3 within five standard deviations of each expected count.
TEST(TfSampleStream, ChoicesAreRandomAccessAndFollowTheWeights) {
  const TfSampleStream s({1.0f, 6.0f, 3.0f}, 7);
  EXPECT_EQ(s.choice(12345), TfSampleStream({1.0f, 6.0f, 3.0f}, 7).choice(12345));
  const int n = 40000;
  std::vector<int> count(3, 0);
  for (int i = n - 1; i >= 0; --i) ++count.at(static_cast<size_t>(s.choice(static_cast<uint64_t>(i))));
  const double p[3] = {0.1, 0.6, 0.3};
  for (int k = 0; k < 3; ++k) {
    const double mean = n * p[k], sd = std::sqrt(n * p[k] * (1 - p[k]));
    EXPECT_NEAR(count[static_cast<size_t>(k)], mean, 5 * sd) << "dataset " << k;
  }
}

TEST(TfSampleStream, RefusesWeightsThatAreNotPositive) {
  EXPECT_THROW(TfSampleStream({}, 1), std::invalid_argument);
  EXPECT_THROW(TfSampleStream({1.0f, 0.0f}, 1), std::invalid_argument);
  EXPECT_THROW(TfSampleStream({1.0f, -2.0f}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace pipec

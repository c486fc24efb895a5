// The arithmetic of tf.data's rejection_resample (runtime/core/tf_resample.h) and the selector draws
// with weights that change from draw to draw (TfSampleStream::choice_with). The pinned values are what
// TensorFlow 2.21 gives: `tf.random.uniform([], seed)` called again and again (the stateful op keeps its
// stream), dataset_ops' _calculate_acceptance_probs_with_mixing and _estimate_data_distribution, and
// sample_from_datasets given a dataset of weights. The conformance fixtures (rejection_resample_*)
// check whole pipelines.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/core/tf_resample.h"
#include "runtime/core/tf_sample_stream.h"

namespace pipec {
namespace {

TEST(TfResample, StatefulUniformEqualsTensorFlowsSuccessiveCalls) {
  const std::vector<float> want = {0.3883112668991089f,  0.31686925888061523f, 0.42907261848449707f,
                                   0.05274152755737305f, 0.7074710130691528f,  0.49199604988098145f};
  for (size_t n = 0; n < want.size(); ++n) EXPECT_EQ(tf_stateful_uniform(5, n), want[n]) << "call " << n;
  // The seed reduced as TensorFlow's get_seed reduces it.
  const uint64_t seed2 = TfSampleStream::truncated_seed(int64_t{1} << 40);
  EXPECT_EQ(tf_stateful_uniform(seed2, 0), 0.27748751640319824f);
  EXPECT_EQ(tf_stateful_uniform(seed2, 1), 0.23753011226654053f);
  EXPECT_EQ(tf_stateful_uniform(seed2, 2), 0.862226128578186f);
}

TEST(TfResample, AcceptanceEqualsTensorFlowsInF32) {
  const TfAcceptance a = tf_acceptance({0.3f, 0.3f, 0.4f}, {0.2f, 0.3f, 0.5f});
  EXPECT_EQ(a.accept, (std::vector<float>{0.0f, 0x1.24924ap-1f, 1.0f}));
  EXPECT_EQ(a.original, 0x1.555554p-1f);
  // An initial chance of 0 is FLT_MIN: the ratio is huge but finite.
  const TfAcceptance z = tf_acceptance({1.0f, 0.0f}, {0.5f, 0.5f});
  EXPECT_EQ(z.accept, (std::vector<float>{0.0f, 1.0f}));
  EXPECT_EQ(z.original, 0.5f);
  // Every ratio equal: 0 / 0, so nothing is accepted, and the original stream is taken with weight 1.
  const TfAcceptance same = tf_acceptance({0.5f, 0.5f}, {0.5f, 0.5f});
  EXPECT_TRUE(std::isnan(same.accept[0]) && std::isnan(same.accept[1]));
  EXPECT_EQ(same.original, 1.0f);
}

TEST(TfResample, EstimateIsCountOverTotalInF64ThenF32) {
  // Counts 10 each, then the classes 0, 2, 2, 1, 2.
  EXPECT_EQ(tf_estimated_distribution({11, 11, 13}),
            (std::vector<float>{0x1.41d41ep-2f, 0x1.41d41ep-2f, 0x1.7c57c6p-2f}));
}

TEST(TfResample, StaticOriginalIsNumpysMinWithoutFltMin) {
  EXPECT_EQ(tf_static_original({0.5f, 0.5f}, {0.5f, 0.5f}), 1.0f);
  EXPECT_EQ(tf_static_original({1 / 3.0f, 1 / 3.0f, 1 / 3.0f}, {0.0f, 0.5f, 0.5f}), 0.0f);
  EXPECT_EQ(tf_static_original({1.0f, 0.0f}, {0.5f, 0.5f}), 0.5f);          // 0.5 / 0 is inf, never the least
  EXPECT_TRUE(std::isnan(tf_static_original({1.0f, 0.0f}, {1.0f, 0.0f})));  // 0 / 0
}

TEST(TfResample, ChoiceWithEqualsSampleFromDatasetsGivenADatasetOfWeights) {
  std::vector<int64_t> got;
  for (uint64_t i = 0; i < 24; ++i) got.push_back(*TfSampleStream::choice_with({0.25f, 0.75f}, 5, i));
  EXPECT_EQ(got, (std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1}));
  // A weight of 0 (log: -inf), negative or NaN is never chosen; with none left there is no choice.
  for (uint64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(TfSampleStream::choice_with({0.0f, 1.0f}, 5, i), 1);
    EXPECT_EQ(TfSampleStream::choice_with({1.0f, -1e-7f}, 5, i), 0);
    EXPECT_EQ(TfSampleStream::choice_with({NAN, 2.0f}, 5, i), 1);
  }
  EXPECT_FALSE(TfSampleStream::choice_with({0.0f, NAN}, 5, 0).has_value());
}

}  // namespace
}  // namespace pipec

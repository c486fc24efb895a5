// The losses computed from logits (after a final sigmoid or softmax) stay finite for logits of ±1e4,
// where the probabilities round to exactly 0 or 1 in f32; their values and gradients are the exact ones.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/train/ref/ref_kernels.h"

namespace pipec {
namespace {

template <class T>
void check_bce_from_logits() {
  ref::LossSpec s{LossKind::BinaryCrossEntropy, true, false, 1.0, 4, 1, 1};
  const T z[4] = {T(1e4), T(-1e4), T(1e4), T(-1e4)};
  const T t[4] = {1, 0, 0, 1};
  double loss = ref::loss<T>(s, z, t);
  EXPECT_DOUBLE_EQ(loss, 5000.0);  // (0 + 0 + 1e4 + 1e4) / 4
  T g[4];
  ref::loss_backward<T>(s, z, t, g);
  const T want[4] = {0, 0, T(0.25), T(-0.25)};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(g[i], want[i]) << i;
}

template <class T>
void check_cross_entropy_from_logits(bool sparse) {
  ref::LossSpec s{LossKind::CrossEntropy, true, sparse, 1.0, 2, 3, 3};
  const T z[6] = {T(1e4), T(-1e4), 0, T(-1e4), T(1e4), 0};
  const T labels[2] = {0, 0};
  const T one_hot[6] = {1, 0, 0, 1, 0, 0};
  const T* t = sparse ? labels : one_hot;
  double loss = ref::loss<T>(s, z, t);
  EXPECT_DOUBLE_EQ(loss, 1e4);  // (0 + 2e4) / 2
  T g[6];
  ref::loss_backward<T>(s, z, t, g);
  const T want[6] = {0, 0, 0, T(-0.5), T(0.5), 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(g[i], want[i]) << i;
}

TEST(TrainLoss, LogitsOfTenThousandStayFinite) {
  check_bce_from_logits<float>();
  check_bce_from_logits<double>();
  check_cross_entropy_from_logits<float>(false);
  check_cross_entropy_from_logits<float>(true);
  check_cross_entropy_from_logits<double>(false);
  check_cross_entropy_from_logits<double>(true);
}

TEST(TrainLoss, ProbabilitiesAreClippedAsKerasClipsThem) {
  // p = 0 and p = 1 are clipped to [1e-7, 1 - 1e-7]: a finite loss of -log(1e-7) per miss, and no
  // gradient where the clip bites.
  ref::LossSpec s{LossKind::BinaryCrossEntropy, false, false, 1.0, 2, 1, 1};
  const double p[2] = {0.0, 1.0}, t[2] = {1, 1};
  EXPECT_NEAR(ref::loss<double>(s, p, t), (-std::log(1e-7) - std::log(1 - 1e-7)) / 2, 1e-12);
  double g[2];
  ref::loss_backward<double>(s, p, t, g);
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(g[1], 0.0);
}

TEST(TrainLoss, ClassLabelOutOfRangeNamesTheExample) {
  ref::LossSpec s{LossKind::CrossEntropy, true, true, 1.0, 3, 4, 4};
  const float z[12] = {};
  const float labels[3] = {1, 4, 0};
  try {
    ref::loss<float>(s, z, labels);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "cross_entropy: example 1 of the batch has class label 4 (position 0), not one of 0..3");
  }
}

}  // namespace
}  // namespace pipec

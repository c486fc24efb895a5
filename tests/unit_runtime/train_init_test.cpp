// Initial weights: Keras' defaults (glorot_uniform kernels with limit sqrt(6 / (fan_in + fan_out)), zero
// biases, ones for gamma and the moving variance), drawn from Philox keyed by the run seed and the
// parameter's name, so they do not depend on the machine or on the other parameters.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/train/math/initializers.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec {
namespace {

int add_param(ModelGraph& g, const std::string& name, Shape shape, Init init, int64_t fan_in = 0, int64_t fan_out = 0,
              bool state = false) {
  GraphValue v;
  v.name = name;
  v.shape = std::move(shape);
  v.batched = false;
  v.role = state ? ValueRole::State : ValueRole::Param;
  v.init = init;
  v.fan_in = fan_in;
  v.fan_out = fan_out;
  std::vector<int>& list = state ? g.states : g.params;
  v.offset = state ? g.state_elements() : g.param_elements();
  int id = g.add_value(v);
  list.push_back(id);
  return id;
}

TEST(TrainInit, GlorotUniformHasKerasLimitAndMoments) {
  ModelGraph g;
  add_param(g, "dense/kernel", {200, 300}, Init::GlorotUniform, 200, 300);
  add_param(g, "dense/bias", {300}, Init::Zeros);
  add_param(g, "batch_normalization/gamma", {5}, Init::Ones);
  add_param(g, "batch_normalization/moving_variance", {5}, Init::Ones, 0, 0, true);
  add_param(g, "batch_normalization/moving_mean", {5}, Init::Zeros, 0, 0, true);
  std::vector<float> params, states;
  initialize_parameters<float>(g, 42, params, states);
  ASSERT_EQ(params.size(), 200u * 300 + 300 + 5);
  ASSERT_EQ(states.size(), 10u);
  const double limit = std::sqrt(6.0 / 500);
  double sum = 0, sq = 0, lo = 1, hi = -1;
  for (int i = 0; i < 60000; ++i) {
    sum += params[i];
    sq += params[i] * params[i];
    lo = std::min<double>(lo, params[i]);
    hi = std::max<double>(hi, params[i]);
  }
  EXPECT_GE(lo, -limit);
  EXPECT_LT(hi, limit);
  EXPECT_LT(lo, -0.99 * limit);
  EXPECT_GT(hi, 0.99 * limit);
  EXPECT_NEAR(sum / 60000, 0, 0.01 * limit);
  EXPECT_NEAR(sq / 60000, limit * limit / 3, 0.02 * limit * limit / 3);
  for (int i = 60000; i < 60300; ++i) EXPECT_EQ(params[i], 0.0f);
  for (int i = 60300; i < 60305; ++i) EXPECT_EQ(params[i], 1.0f);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(states[i], 1.0f);
  for (int i = 5; i < 10; ++i) EXPECT_EQ(states[i], 0.0f);
}

TEST(TrainInit, KeyedBySeedAndName) {
  ModelGraph a;
  add_param(a, "conv2d/kernel", {3, 3, 2, 4}, Init::GlorotUniform, 18, 36);
  ModelGraph b;
  add_param(b, "extra/kernel", {7, 7}, Init::GlorotUniform, 7, 7);
  add_param(b, "conv2d/kernel", {3, 3, 2, 4}, Init::GlorotUniform, 18, 36);
  std::vector<float> pa, pb, pc, s;
  initialize_parameters<float>(a, 5, pa, s);
  initialize_parameters<float>(b, 5, pb, s);
  initialize_parameters<float>(a, 6, pc, s);
  // The same parameter draws the same values wherever it sits in the buffer.
  EXPECT_EQ(pa, std::vector<float>(pb.begin() + 49, pb.end()));
  EXPECT_NE(pa, pc);
  EXPECT_NE(std::vector<float>(pb.begin(), pb.begin() + 49), std::vector<float>(pa.begin(), pa.begin() + 49));
  // Pinned values: a change to the mapping changes every trained model, so it must be deliberate.
  EXPECT_EQ(pa[0], 0.155950353f);
  EXPECT_EQ(pa[1], -0.0367606096f);
  EXPECT_EQ(pa[71], -0.0896111727f);
  std::vector<double> pd;
  std::vector<double> sd;
  initialize_parameters<double>(a, 5, pd, sd);
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(static_cast<float>(pd[i]), pa[i]);
}

TEST(TrainInit, Fnv1aIsTheStandardHash) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace pipec

namespace pipec {
namespace {

// Dropout keeps each value with probability 1 - rate and scales it by 1 / (1 - rate); the mask is a
// function of (seed, layer, step, example), so the same step gives the same mask and the next step another.
TEST(TrainDropout, MaskKeepsOneMinusRateAndIsKeyedByStep) {
  const int64_t batch = 8, per = 5000;
  std::vector<float> a(batch * per), b(batch * per), c(batch * per), other_seed(batch * per);
  ref::dropout_mask<float>(batch, per, 0.3, 11, 0, 4, a.data());
  ref::dropout_mask<float>(batch, per, 0.3, 11, 0, 4, b.data());
  ref::dropout_mask<float>(batch, per, 0.3, 11, 0, 5, c.data());
  ref::dropout_mask<float>(batch, per, 0.3, 12, 0, 4, other_seed.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, other_seed);
  int64_t kept = 0;
  for (float v : a) {
    ASSERT_TRUE(v == 0.0f || v == static_cast<float>(1.0 / 0.7)) << v;
    kept += v != 0;
  }
  EXPECT_NEAR(static_cast<double>(kept) / a.size(), 0.7, 0.01);
}

}  // namespace
}  // namespace pipec

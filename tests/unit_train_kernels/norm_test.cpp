// BatchNormOp and LayerNormOp against the f64 loops.
//
// Tolerance: the statistics are sums of `count` values (error gamma(count) relative to the sums of
// |x| and x^2), and the kernel may form the variance as E[x^2] - mean^2, which loses up to
// E[x^2] / var of relative accuracy. Propagated through (x - mean) / sqrt(var + eps), an output's error is
// below 4 gamma(count + 8) * (|gamma| (1 + |xhat|) E[x^2] / var + |beta|), and the input gradient's below
// 4 gamma(count + 8) * |gamma| / std * (|dy| + mean|dy| + |xhat| mean|dy xhat|) * (1 + E[x^2] / var).
// An epsilon left out or a variance with Bessel's correction misses these bounds by 10x or more.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/train/dnnl/batch_norm.h"
#include "runtime/train/dnnl/layer_norm.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

using test::random_data;

struct NormCheck {
  int64_t groups, params, count;
  std::function<int64_t(size_t)> group_of, param_of;
};

// Compares y (forward) and dx, dgamma, dbeta (backward) of one normalization with the f64 loops.
void check_norm(const NormCheck& n, const test::Data& x, const test::Data& gamma, const test::Data& beta, double eps,
                const std::vector<float>& y, const test::Data& dy, const std::vector<float>& dx,
                const std::vector<float>& dgamma, const std::vector<float>& dbeta) {
  naive::Stats s = naive::statistics(x.d, n.groups, n.group_of);
  naive::Vec want = naive::normalize(x.d, s, eps, gamma.d, beta.d, n.group_of, n.param_of);
  const double g = test::gamma_bound(n.count + 8);
  naive::Vec tol(y.size()), xhat(y.size());
  for (size_t e = 0; e < y.size(); ++e) {
    int64_t k = n.group_of(e), p = n.param_of(e);
    double var = s.variance[k] + eps;
    xhat[e] = (x.d[e] - s.mean[k]) / std::sqrt(var);
    tol[e] =
        4 * g * (std::abs(gamma.d[p]) * (1 + std::abs(xhat[e])) * (s.mean_square[k] + eps) / var + std::abs(beta.d[p]));
  }
  test::expect_within(y, want, tol, "y");

  naive::NormGrads grads =
      naive::normalize_backward(x.d, s, eps, gamma.d, dy.d, n.groups, n.params, n.group_of, n.param_of);
  naive::Vec mean_abs_dy(n.groups, 0.0), mean_abs_dyx(n.groups, 0.0), sum_abs_dy(n.params, 0.0),
      sum_abs_dyx(n.params, 0.0);
  for (size_t e = 0; e < y.size(); ++e) {
    mean_abs_dy[n.group_of(e)] += std::abs(dy.d[e] * gamma.d[n.param_of(e)]) / n.count;
    mean_abs_dyx[n.group_of(e)] += std::abs(dy.d[e] * gamma.d[n.param_of(e)] * xhat[e]) / n.count;
    sum_abs_dy[n.param_of(e)] += std::abs(dy.d[e]);
    sum_abs_dyx[n.param_of(e)] += std::abs(dy.d[e] * xhat[e]);
  }
  naive::Vec tol_dx(y.size()), tol_dgamma(n.params), tol_dbeta(n.params);
  for (size_t e = 0; e < y.size(); ++e) {
    int64_t k = n.group_of(e), p = n.param_of(e);
    double var = s.variance[k] + eps, cond = 1 + (s.mean_square[k] + eps) / var;
    tol_dx[e] = 4 * g / std::sqrt(var) *
                (std::abs(dy.d[e] * gamma.d[p]) + mean_abs_dy[k] + std::abs(xhat[e]) * mean_abs_dyx[k]) * cond;
  }
  // dgamma and dbeta sum over the other axis: as many terms as there are values of one parameter.
  int64_t per_param = int64_t(y.size()) / n.params;
  double worst_cond = 1;
  for (int64_t k = 0; k < n.groups; ++k)
    worst_cond = std::max(worst_cond, 1 + (s.mean_square[k] + eps) / (s.variance[k] + eps));
  for (int64_t p = 0; p < n.params; ++p) {
    tol_dgamma[p] = 4 * (test::gamma_bound(per_param + 8) + g * worst_cond) * sum_abs_dyx[p] + 1e-30;
    tol_dbeta[p] = test::gamma_bound(per_param + 2) * sum_abs_dy[p] + 1e-30;
  }
  test::expect_within(dx, grads.dx, tol_dx, "dx");
  test::expect_within(dgamma, grads.dgamma, tol_dgamma, "dgamma");
  test::expect_within(dbeta, grads.dbeta, tol_dbeta, "dbeta");
}

struct BnCase {
  int64_t n, h, w, c;
};
void PrintTo(const BnCase& c, std::ostream* os) { *os << c.n << "x" << c.h << "x" << c.w << "x" << c.c; }

class BatchNormTest : public ::testing::TestWithParam<BnCase> {};

TEST_P(BatchNormTest, TrainingForwardBackwardAndMovingStatistics) {
  BnCase c = GetParam();
  CpuKernels kernels;
  BatchNormDesc d;
  d.batch = c.n, d.height = c.h, d.width = c.w, d.channels = c.c;
  BatchNormOp op(kernels, d);
  const int64_t size = c.n * c.h * c.w * c.c;
  auto x = random_data(size, 71, -1, 2);  // a mean away from zero
  auto gamma = random_data(c.c, 72, 0.5, 1.5);
  auto beta = random_data(c.c, 73);
  auto moving_mean = random_data(c.c, 74), moving_var = random_data(c.c, 75, 0.5, 2);
  std::vector<float> mm = moving_mean.f, mv = moving_var.f;
  std::vector<float> y(size, NAN);
  op.forward_training(x.data(), gamma.data(), beta.data(), y.data(), mm.data(), mv.data());

  auto dy = random_data(size, 76);
  std::vector<float> dx(size, NAN), dgamma(c.c, NAN), dbeta(c.c, NAN);
  op.backward(x.data(), gamma.data(), dy.data(), dx.data(), dgamma.data(), dbeta.data());
  NormCheck n{c.c, c.c, c.n * c.h * c.w, [&](size_t e) { return int64_t(e % c.c); },
              [&](size_t e) { return int64_t(e % c.c); }};
  check_norm(n, x, gamma, beta, d.epsilon, y, dy, dx, dgamma, dbeta);

  // Keras: moving = moving * momentum + batch * (1 - momentum), with the biased batch variance.
  naive::Stats s = naive::statistics(x.d, c.c, n.group_of);
  for (int64_t k = 0; k < c.c; ++k) {
    double want_mean = moving_mean.d[k] * 0.99 + s.mean[k] * 0.01;
    double want_var = moving_var.d[k] * 0.99 + s.variance[k] * 0.01;
    EXPECT_NEAR(mm[k], want_mean, 1e-6) << "channel " << k;
    EXPECT_NEAR(mv[k], want_var, 1e-6) << "channel " << k;
    EXPECT_NEAR(op.batch_variance()[k], s.variance[k], 1e-5) << "channel " << k;
  }

  // Inference uses the moving statistics given.
  std::vector<float> yi(size, NAN);
  op.forward_inference(x.data(), gamma.data(), beta.data(), moving_mean.data(), moving_var.data(), yi.data());
  for (int64_t e = 0; e < size; e += 7) {
    int64_t k = e % c.c;
    double want = gamma.d[k] * (x.d[e] - moving_mean.d[k]) / std::sqrt(moving_var.d[k] + d.epsilon) + beta.d[k];
    EXPECT_NEAR(yi[e], want, 1e-5 * (1 + std::abs(want))) << "element " << e;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormTest,
                         ::testing::Values(BnCase{1, 5, 7, 3}, BnCase{3, 4, 5, 17}, BnCase{3, 6, 2, 1},
                                           BnCase{7, 1, 1, 17}),
                         [](const auto& info) {
                           const BnCase& c = info.param;
                           return "n" + std::to_string(c.n) + "_" + std::to_string(c.h) + "x" + std::to_string(c.w) +
                                  "_c" + std::to_string(c.c);
                         });

TEST(LayerNorm, ForwardAndBackwardMatchTheF64Loops) {
  for (auto [rows, features] : {std::pair<int64_t, int64_t>{1, 3}, {3, 17}, {17, 1}, {5, 64}}) {
    SCOPED_TRACE("rows " + std::to_string(rows) + " features " + std::to_string(features));
    CpuKernels kernels;
    LayerNormDesc d;
    d.rows = rows, d.features = features;
    LayerNormOp op(kernels, d);
    auto x = random_data(rows * features, 81, -1, 2);
    auto gamma = random_data(features, 82, 0.5, 1.5);
    auto beta = random_data(features, 83);
    std::vector<float> y(x.size(), NAN);
    op.forward(x.data(), gamma.data(), beta.data(), y.data());
    auto dy = random_data(x.size(), 84);
    std::vector<float> dx(x.size(), NAN), dgamma(features, NAN), dbeta(features, NAN);
    op.backward(x.data(), gamma.data(), dy.data(), dx.data(), dgamma.data(), dbeta.data());
    NormCheck n{rows, features, features, [&](size_t e) { return int64_t(e / features); },
                [&](size_t e) { return int64_t(e % features); }};
    check_norm(n, x, gamma, beta, d.epsilon, y, dy, dx, dgamma, dbeta);

    // The overloads with the statistics in the caller's buffers (a step graph's values): the same
    // results, each row's mean and biased variance written out, and a backward by another op of the
    // same shape, fed those statistics, gives the same gradients.
    std::vector<float> y2(x.size(), NAN), mean(rows, NAN), variance(rows, NAN);
    op.forward(x.data(), gamma.data(), beta.data(), y2.data(), mean.data(), variance.data());
    EXPECT_EQ(y2, y);
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int64_t f = 0; f < features; ++f) m += x.f[r * features + f];
      m /= double(features);
      for (int64_t f = 0; f < features; ++f) v += (x.f[r * features + f] - m) * (x.f[r * features + f] - m);
      v /= double(features);
      EXPECT_NEAR(mean[r], m, 1e-6 * (1 + std::fabs(m)));
      EXPECT_NEAR(variance[r], v, 1e-5 * (1 + v));
    }
    LayerNormOp other(kernels, d);
    std::vector<float> dx2(x.size(), NAN), dgamma2(features, NAN), dbeta2(features, NAN);
    other.backward(x.data(), gamma.data(), dy.data(), mean.data(), variance.data(), dx2.data(), dgamma2.data(),
                   dbeta2.data());
    EXPECT_EQ(dx2, dx);
    EXPECT_EQ(dgamma2, dgamma);
    EXPECT_EQ(dbeta2, dbeta);
  }
}

}  // namespace
}  // namespace pipec::train

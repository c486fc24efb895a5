// The kernels against Keras itself (keras_fixtures.inc, made by make_keras_fixtures.py): outputs and
// the gradients of sum(y * dy), for the cases where TensorFlow's conventions are easy to get wrong:
// `same` with even kernels and strides, dilation, transposed convolutions whose kernel is smaller than the
// stride, avg pooling's count at the border, batch norm's moving statistics.
//
// Both sides compute in f32, so they may differ by twice the error bound of one f32 evaluation
// (train_kernel_test_util.h); the f64 loops must agree with Keras within one bound, which pins the
// oracle of the other tests to Keras too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/train/dnnl/batch_norm.h"
#include "runtime/train/dnnl/conv2d.h"
#include "runtime/train/dnnl/conv2d_transpose.h"
#include "runtime/train/dnnl/dense.h"
#include "runtime/train/dnnl/layer_norm.h"
#include "runtime/train/dnnl/pool2d.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

struct KerasFixture {
  const char* name;
  std::vector<int64_t> x_shape, y_shape;
  std::vector<float> x;
  std::vector<std::vector<float>> weights;  // before the call
  std::vector<float> dy, y, dx;
  std::vector<std::vector<float>> weight_grads;
  std::vector<std::vector<float>> weights_after;  // batch norm's moving statistics move in training
};

#include "tests/unit_train_kernels/keras_fixtures.inc"

naive::Vec f64(const std::vector<float>& v) { return naive::Vec(v.begin(), v.end()); }

// got (ours) and the f64 loop (`oracle`) against Keras' values.
void expect_matches_keras(const std::vector<float>& got, const std::vector<float>& keras, const naive::Result& oracle,
                          const std::string& what) {
  naive::Result twice = oracle;
  for (double& m : twice.magnitude) m *= 2;
  naive::Result from_keras{f64(keras), twice.magnitude, oracle.terms};
  test::expect_within_bound(got, from_keras, what + " (kernel vs Keras)");
  std::vector<float> oracle_f(oracle.value.begin(), oracle.value.end());
  naive::Vec tol(keras.size());
  const double g = test::gamma_bound(oracle.terms + 2);
  for (size_t i = 0; i < tol.size(); ++i) tol[i] = g * oracle.magnitude[i] + 1e-7 * std::abs(oracle.value[i]);
  test::expect_within(keras, oracle.value, tol, what + " (Keras vs the f64 loop)");
}

void check_conv(const KerasFixture& f, int64_t filters, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dil,
                bool same) {
  SCOPED_TRACE(f.name);
  naive::Conv p{f.x_shape[0], f.x_shape[1], f.x_shape[2], f.x_shape[3], filters, kh, kw, sh, sw, dil, dil, same};
  CpuKernels k;
  Conv2dDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = p.f, d.kernel_h = kh, d.kernel_w = kw;
  d.stride_h = sh, d.stride_w = sw, d.dilation_h = dil, d.dilation_w = dil;
  d.padding = same ? Padding::Same : Padding::Valid;
  Conv2dOp op(k, d);
  ASSERT_EQ(f.y_shape, (std::vector<int64_t>{p.n, op.out_h(), op.out_w(), filters}));
  std::vector<float> y(f.y.size()), dx(f.x.size()), dw(f.weights[0].size()), db(filters);
  op.forward(f.x.data(), f.weights[0].data(), f.weights[1].data(), y.data());
  op.backward(f.x.data(), f.weights[0].data(), f.dy.data(), dx.data(), dw.data(), db.data());
  naive::Vec b = f64(f.weights[1]);
  naive::ConvGrads g = naive::conv2d_backward(p, f64(f.x), f64(f.weights[0]), f64(f.dy));
  expect_matches_keras(y, f.y, naive::conv2d(p, f64(f.x), f64(f.weights[0]), &b), "y");
  expect_matches_keras(dx, f.dx, g.dx, "dx");
  expect_matches_keras(dw, f.weight_grads[0], g.dw, "dw");
  expect_matches_keras(db, f.weight_grads[1], g.db, "db");
}

TEST(KerasFixtures, Conv2d) {
  check_conv(conv2d_even_kernel_stride2_same, 4, 2, 2, 2, 2, 1, true);
  check_conv(conv2d_dilation2_same, 3, 3, 3, 1, 1, 2, true);
  check_conv(conv2d_3x2_stride2x1_valid, 2, 3, 2, 2, 1, 1, false);
}

void check_transpose(const KerasFixture& f, int64_t filters, int64_t k_size, int64_t stride, bool same) {
  SCOPED_TRACE(f.name);
  naive::Transpose p{f.x_shape[0], f.x_shape[1], f.x_shape[2], f.x_shape[3], filters,
                     k_size,       k_size,       stride,       stride,       same};
  CpuKernels k;
  Conv2dTransposeDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = filters;
  d.kernel_h = d.kernel_w = k_size, d.stride_h = d.stride_w = stride, d.padding = same ? Padding::Same : Padding::Valid;
  Conv2dTransposeOp op(k, d);
  ASSERT_EQ(f.y_shape, (std::vector<int64_t>{p.n, op.out_h(), op.out_w(), filters}));
  std::vector<float> y(f.y.size()), dx(f.x.size()), dw(f.weights[0].size()), db(filters);
  op.forward(f.x.data(), f.weights[0].data(), f.weights[1].data(), y.data());
  op.backward(f.x.data(), f.weights[0].data(), f.dy.data(), dx.data(), dw.data(), db.data());
  naive::Vec b = f64(f.weights[1]);
  naive::ConvGrads g = naive::conv2d_transpose_backward(p, f64(f.x), f64(f.weights[0]), f64(f.dy));
  expect_matches_keras(y, f.y, naive::conv2d_transpose(p, f64(f.x), f64(f.weights[0]), &b), "y");
  expect_matches_keras(dx, f.dx, g.dx, "dx");
  expect_matches_keras(dw, f.weight_grads[0], g.dw, "dw");
  expect_matches_keras(db, f.weight_grads[1], g.db, "db");
}

TEST(KerasFixtures, Conv2dTranspose) {
  check_transpose(conv2d_transpose_k3_stride2_same, 2, 3, 2, true);
  check_transpose(conv2d_transpose_k4_stride2_same, 3, 4, 2, true);
  check_transpose(conv2d_transpose_k1_stride2_valid, 2, 1, 2, false);
  check_transpose(conv2d_transpose_k2_stride3_same, 2, 2, 3, true);
}

TEST(KerasFixtures, Dense) {
  const KerasFixture& f = dense_5_to_3;
  CpuKernels k;
  DenseDesc d;
  d.rows = 4, d.in = 5, d.out = 3;
  DenseOp op(k, d);
  std::vector<float> y(f.y.size()), dx(f.x.size()), dw(f.weights[0].size()), db(3);
  op.forward(f.x.data(), f.weights[0].data(), f.weights[1].data(), y.data());
  op.backward(f.x.data(), f.weights[0].data(), f.dy.data(), dx.data(), dw.data(), db.data());
  naive::Vec b = f64(f.weights[1]);
  naive::ConvGrads g = naive::dense_backward(4, 5, 3, f64(f.x), f64(f.weights[0]), f64(f.dy));
  expect_matches_keras(y, f.y, naive::dense(4, 5, 3, f64(f.x), f64(f.weights[0]), &b), "y");
  expect_matches_keras(dx, f.dx, g.dx, "dx");
  expect_matches_keras(dw, f.weight_grads[0], g.dw, "dw");
  expect_matches_keras(db, f.weight_grads[1], g.db, "db");
}

void check_pool(const KerasFixture& f, bool max, int64_t size, int64_t stride) {
  SCOPED_TRACE(f.name);
  naive::Pool p{f.x_shape[0], f.x_shape[1], f.x_shape[2], f.x_shape[3], size, size, stride, stride, true, max};
  CpuKernels k;
  Pool2dDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.channels = p.c, d.kind = max ? PoolKind::Max : PoolKind::Avg;
  d.size_h = d.size_w = size, d.stride_h = d.stride_w = stride, d.padding = Padding::Same;
  Pool2dOp op(k, d);
  ASSERT_EQ(f.y_shape, (std::vector<int64_t>{p.n, op.out_h(), op.out_w(), p.c}));
  std::vector<float> y(f.y.size()), dx(f.x.size());
  op.forward(f.x.data(), y.data());
  op.backward(f.dy.data(), dx.data());
  expect_matches_keras(y, f.y, naive::pool(p, f64(f.x)), "y");
  expect_matches_keras(dx, f.dx, naive::pool_backward(p, f64(f.x), f64(f.dy)), "dx");
}

TEST(KerasFixtures, Pools) {
  check_pool(max_pool_2x2_stride2_same, true, 2, 2);
  check_pool(avg_pool_3x3_stride2_same, false, 3, 2);
}

// Normalizations: a few dozen values per statistic, so both sides are within ~1e-6 of exact; 1e-5
// relative (plus 1e-5 absolute) leaves room and still catches a missing epsilon (~1e-3 here) or a
// Bessel-corrected variance (~3% on 36 values).
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  naive::Vec tol(want.size());
  for (size_t i = 0; i < want.size(); ++i) tol[i] = 1e-5 * (1 + std::abs(want[i]));
  test::expect_within(got, f64(want), tol, what);
}

TEST(KerasFixtures, BatchNormTrainingMovesTheStatisticsAsKeras) {
  const KerasFixture& f = batch_norm_training;
  CpuKernels k;
  BatchNormDesc d;
  d.batch = 4, d.height = 3, d.width = 3, d.channels = 2;  // Keras' defaults: epsilon 1e-3, momentum 0.99
  BatchNormOp op(k, d);
  std::vector<float> mean = f.weights[2], var = f.weights[3];
  std::vector<float> y(f.y.size()), dx(f.x.size()), dgamma(2), dbeta(2);
  op.forward_training(f.x.data(), f.weights[0].data(), f.weights[1].data(), y.data(), mean.data(), var.data());
  op.backward(f.x.data(), f.weights[0].data(), f.dy.data(), dx.data(), dgamma.data(), dbeta.data());
  expect_close(y, f.y, "y");
  expect_close(dx, f.dx, "dx");
  expect_close(dgamma, f.weight_grads[0], "dgamma");
  expect_close(dbeta, f.weight_grads[1], "dbeta");
  expect_close(mean, f.weights_after[2], "moving mean");
  expect_close(var, f.weights_after[3], "moving variance");
}

TEST(KerasFixtures, BatchNormInferenceUsesTheMovingStatistics) {
  const KerasFixture& f = batch_norm_inference;
  CpuKernels k;
  BatchNormDesc d;
  d.batch = 3, d.height = 2, d.width = 2, d.channels = 3;
  BatchNormOp op(k, d);
  std::vector<float> y(f.y.size());
  op.forward_inference(f.x.data(), f.weights[0].data(), f.weights[1].data(), f.weights[2].data(), f.weights[3].data(),
                       y.data());
  expect_close(y, f.y, "y");
}

TEST(KerasFixtures, LayerNorm) {
  const KerasFixture& f = layer_norm;
  CpuKernels k;
  LayerNormDesc d;
  d.rows = 3, d.features = 5;
  LayerNormOp op(k, d);
  std::vector<float> y(f.y.size()), dx(f.x.size()), dgamma(5), dbeta(5);
  op.forward(f.x.data(), f.weights[0].data(), f.weights[1].data(), y.data());
  op.backward(f.x.data(), f.weights[0].data(), f.dy.data(), dx.data(), dgamma.data(), dbeta.data());
  expect_close(y, f.y, "y");
  expect_close(dx, f.dx, "dx");
  expect_close(dgamma, f.weight_grads[0], "dgamma");
  expect_close(dbeta, f.weight_grads[1], "dbeta");
}

}  // namespace
}  // namespace pipec::train

// DenseOp against the f64 loops: one row and several, odd widths, with and without bias, fused
// activations, the chess net's dense(256) on 4106 inputs.
#include "runtime/train/dnnl/dense.h"

#include <gtest/gtest.h>

#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

using test::random_data;

struct DenseCase {
  int64_t rows, in, out;
  bool bias;
};
void PrintTo(const DenseCase& c, std::ostream* os) { *os << c.rows << "x" << c.in << " -> " << c.out; }

class DenseTest : public ::testing::TestWithParam<std::tuple<DenseCase, ActivationLayout>> {};

TEST_P(DenseTest, ForwardAndBackwardMatchTheF64Loops) {
  const auto& [c, layout] = GetParam();
  CpuKernels kernels({0, layout});
  DenseDesc d;
  d.rows = c.rows, d.in = c.in, d.out = c.out, d.bias = c.bias;
  DenseOp op(kernels, d);
  auto x = random_data(c.rows * c.in, 41);
  auto w = random_data(c.in * c.out, 42);  // [in, out]
  auto b = random_data(c.out, 43);
  std::vector<float> y(c.rows * c.out, NAN);
  op.forward(x.data(), w.data(), c.bias ? b.data() : nullptr, y.data());
  test::expect_within_bound(y, naive::dense(c.rows, c.in, c.out, x.d, w.d, c.bias ? &b.d : nullptr), "y");

  auto dy = random_data(y.size(), 44);
  std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(c.out, NAN);
  op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), c.bias ? db.data() : nullptr);
  naive::ConvGrads g = naive::dense_backward(c.rows, c.in, c.out, x.d, w.d, dy.d);
  test::expect_within_bound(dx, g.dx, "dx");
  test::expect_within_bound(dw, g.dw, "dw");
  if (c.bias) test::expect_within_bound(db, g.db, "db");
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenseTest,
                         ::testing::Combine(::testing::Values(DenseCase{1, 3, 1, true}, DenseCase{3, 17, 5, true},
                                                              DenseCase{3, 1, 17, false}, DenseCase{7, 33, 3, true},
                                                              DenseCase{16, 4106, 256, true}),
                                            ::testing::Values(ActivationLayout::Nhwc, ActivationLayout::Any)),
                         [](const auto& info) {
                           const DenseCase& c = std::get<0>(info.param);
                           return "rows" + std::to_string(c.rows) + "_in" + std::to_string(c.in) + "_out" +
                                  std::to_string(c.out) + (c.bias ? "" : "_nobias") +
                                  (std::get<1>(info.param) == ActivationLayout::Nhwc ? "_nhwc" : "_any");
                         });

TEST(Dense, FusedTanhAsTheChessNetsLastLayer) {
  CpuKernels kernels;
  DenseDesc d;
  d.rows = 3, d.in = 17, d.out = 1, d.activation = Activation::tanh();
  DenseOp op(kernels, d);
  auto x = random_data(d.rows * d.in, 51, -2, 2);
  auto w = random_data(d.in, 52);
  auto b = random_data(1, 53);
  std::vector<float> y(d.rows);
  op.forward(x.data(), w.data(), b.data(), y.data());
  naive::Result z = naive::dense(d.rows, d.in, d.out, x.d, w.d, &b.d);
  naive::Vec want(y.size()), tol(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    want[i] = std::tanh(z.value[i]);
    tol[i] = test::gamma_bound(z.terms + 2) * z.magnitude[i] + 8 * test::kUnitRoundoff;
  }
  test::expect_within(y, want, tol, "dense + tanh");
}

}  // namespace
}  // namespace pipec::train

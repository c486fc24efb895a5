// Conv2dTransposeOp against the f64 loops: strides 1-3, `same` and `valid`, kernels smaller than the
// stride (the last output rows get no window: a negative right padding for oneDNN), odd channels.
#include "runtime/train/dnnl/conv2d_transpose.h"

#include <gtest/gtest.h>

#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

using test::random_data;

struct TransposeCase {
  naive::Transpose p;
  const char* name;
};
void PrintTo(const TransposeCase& c, std::ostream* os) { *os << c.name; }

std::vector<TransposeCase> cases() {
  return {
      {{1, 4, 5, 3, 4, 3, 3, 2, 2, true}, "batch1_4x5_k3_stride2_same"},
      {{3, 3, 4, 17, 5, 3, 3, 2, 2, false}, "batch3_3x4_c17_k3_stride2_valid"},
      {{3, 5, 3, 1, 3, 2, 2, 1, 1, true}, "batch3_5x3_c1_k2_even_same"},
      {{2, 3, 3, 3, 17, 4, 4, 2, 2, true}, "batch2_k4_even_stride2_same_f17"},
      {{3, 3, 4, 3, 2, 1, 1, 2, 2, false}, "k1_smaller_than_stride2_valid"},
      {{1, 3, 2, 3, 2, 2, 1, 3, 3, true}, "k2x1_smaller_than_stride3_same"},
      {{3, 4, 3, 2, 3, 2, 3, 3, 2, false}, "k2x3_stride3x2_valid"},
  };
}

Conv2dTransposeDesc desc_of(const naive::Transpose& p, bool bias) {
  Conv2dTransposeDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = p.f;
  d.kernel_h = p.kh, d.kernel_w = p.kw, d.stride_h = p.sh, d.stride_w = p.sw;
  d.padding = p.same ? Padding::Same : Padding::Valid;
  d.bias = bias;
  return d;
}

class Conv2dTransposeTest : public ::testing::TestWithParam<std::tuple<TransposeCase, ActivationLayout>> {};

TEST_P(Conv2dTransposeTest, ForwardAndBackwardMatchTheF64Loops) {
  const auto& [c, layout] = GetParam();
  const naive::Transpose& p = c.p;
  CpuKernels kernels({0, layout});
  Conv2dTransposeOp op(kernels, desc_of(p, true));
  naive::Pad r = p.rows(), q = p.cols();
  ASSERT_EQ(op.out_h(), r.out);
  ASSERT_EQ(op.out_w(), q.out);

  auto x = random_data(p.n * p.h * p.w * p.c, 31);
  auto w = random_data(p.kh * p.kw * p.f * p.c, 32);  // HWOI
  auto b = random_data(p.f, 33);
  std::vector<float> y(p.n * r.out * q.out * p.f, NAN);
  op.forward(x.data(), w.data(), b.data(), y.data());
  test::expect_within_bound(y, naive::conv2d_transpose(p, x.d, w.d, &b.d), "y");

  auto dy = random_data(y.size(), 34);
  std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(p.f, NAN);
  op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  naive::ConvGrads g = naive::conv2d_transpose_backward(p, x.d, w.d, dy.d);
  test::expect_within_bound(dx, g.dx, "dx");
  test::expect_within_bound(dw, g.dw, "dw");
  test::expect_within_bound(db, g.db, "db");
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dTransposeTest,
                         ::testing::Combine(::testing::ValuesIn(cases()),
                                            ::testing::Values(ActivationLayout::Nhwc, ActivationLayout::Any)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) == ActivationLayout::Nhwc ? "_nhwc" : "_any");
                         });

}  // namespace
}  // namespace pipec::train

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

namespace pipec::train {
namespace {

// A kernel smaller than its stride leaves TensorFlow's last output rows (or columns) without a window.
// Given to oneDNN 2.6 as a negative right padding, its 1x1 backward-weights kernel wrote past a buffer
// of its own (valgrind saw it), and on 2 threads about half the calls gave a wrong kernel gradient,
// changing from call to call (found by tests/train_difftest, seed 584). Conv2dTransposeOp now runs the
// primitives on the rows windows reach only: every one of many calls matches the f64 loops.
TEST(Conv2dTranspose, KernelSmallerThanStrideGivesTheSameGradientsOnEveryCall) {
  const std::vector<naive::Transpose> shapes = {
      {6, 4, 4, 1, 3, 1, 1, 2, 1, false},  // the difftest's case: 4x4x1 -> 8x4x3, k1, stride [2, 1]
      {6, 4, 4, 1, 3, 1, 1, 2, 2, false}, {6, 4, 4, 3, 8, 1, 1, 2, 1, false},
      {2, 4, 4, 1, 3, 1, 1, 2, 1, true},  {6, 4, 4, 1, 3, 1, 2, 3, 1, false},
  };
  for (int threads : {1, 2})
    for (const naive::Transpose& p : shapes) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, " << p.n << "x" << p.h << "x" << p.w << "x" << p.c
                                        << " -> " << p.f << ", kernel " << p.kh << "x" << p.kw << ", stride " << p.sh
                                        << "x" << p.sw << (p.same ? " same" : " valid"));
      CpuKernels kernels(CpuKernelOptions{threads, ActivationLayout::Nhwc, ConvAlgorithm::Direct});
      Conv2dTransposeOp op(kernels, desc_of(p, true));
      const naive::Pad r = p.rows(), q = p.cols();
      auto x = random_data(p.n * p.h * p.w * p.c, 31);
      auto w = random_data(p.kh * p.kw * p.f * p.c, 32);
      auto b = random_data(p.f, 33);
      std::vector<float> y(p.n * r.out * q.out * p.f, NAN);
      op.forward(x.data(), w.data(), b.data(), y.data());
      test::expect_within_bound(y, naive::conv2d_transpose(p, x.d, w.d, &b.d), "y");
      auto dy = random_data(y.size(), 34);
      const naive::ConvGrads g = naive::conv2d_transpose_backward(p, x.d, w.d, dy.d);
      for (int call = 0; call < 20 && !::testing::Test::HasFailure(); ++call) {
        std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(p.f, NAN);
        op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
        test::expect_within_bound(dx, g.dx, "dx");
        test::expect_within_bound(dw, g.dw, "dw");
        test::expect_within_bound(db, g.db, "db");
      }
    }
}

// The rows and columns no window covers hold the bias alone, through the fused activation, as every
// other output does (the same bound as Conv2d.FusedActivationsApplyAfterTheBias).
TEST(Conv2dTranspose, FusedActivationsReachTheRowsNoWindowCovers) {
  const naive::Transpose p{2, 3, 4, 2, 5, 1, 2, 3, 2, false};  // rows: kernel 1 < stride 3
  auto x = random_data(p.n * p.h * p.w * p.c, 41, -2, 2);
  auto w = random_data(p.kh * p.kw * p.f * p.c, 42);
  auto b = random_data(p.f, 43);
  const naive::Result z = naive::conv2d_transpose(p, x.d, w.d, &b.d);
  for (Activation act : {Activation::none(), Activation::relu(), Activation::leaky_relu(0.2f), Activation::tanh(),
                         Activation::sigmoid(), Activation::gelu(), Activation::gelu_tanh()}) {
    CpuKernels kernels;
    Conv2dTransposeDesc d = desc_of(p, true);
    d.activation = act;
    Conv2dTransposeOp op(kernels, d);
    std::vector<float> y(z.value.size(), NAN);
    op.forward(x.data(), w.data(), b.data(), y.data());
    naive::Vec want(y.size()), tol(y.size());
    for (size_t i = 0; i < y.size(); ++i) {
      want[i] = naive::activation(int(act.kind), act.alpha, z.value[i]);
      tol[i] =
          1.13 * test::gamma_bound(z.terms + 2) * z.magnitude[i] + 8 * test::kUnitRoundoff * (std::abs(want[i]) + 1e-3);
    }
    test::expect_within(y, want, tol, "conv2d_transpose + " + act.name());
  }
}

}  // namespace
}  // namespace pipec::train

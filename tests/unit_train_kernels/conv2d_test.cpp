// Conv2dOp forward and backward against the f64 loops, on odd shapes: batch 1 and 3, non-square images,
// strides 2, dilation 2, `same` with even kernels, 1/3/17 channels; in both activation layouts.
#include "runtime/train/dnnl/conv2d.h"

#include <gtest/gtest.h>

#include "runtime/train/dnnl/eltwise.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

using test::random_data;

struct ConvCase {
  naive::Conv p;
  const char* name;
};
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

std::vector<ConvCase> conv_cases() {
  return {
      {{1, 5, 7, 3, 4, 3, 3, 1, 1, 1, 1, true}, "batch1_5x7_c3_k3_same"},
      {{3, 6, 5, 17, 5, 2, 2, 1, 1, 1, 1, true}, "batch3_6x5_c17_k2_even_same"},
      {{3, 7, 9, 1, 3, 3, 2, 2, 2, 1, 1, true}, "batch3_7x9_c1_k3x2_stride2_same"},
      {{1, 9, 6, 3, 17, 3, 3, 1, 1, 2, 2, true}, "batch1_9x6_c3_f17_dilation2_same"},
      {{3, 8, 7, 17, 2, 3, 3, 2, 2, 1, 1, false}, "batch3_8x7_c17_stride2_valid"},
      {{2, 7, 7, 3, 4, 2, 2, 1, 1, 2, 2, false}, "batch2_7x7_k2_dilation2_valid"},
      {{3, 6, 6, 3, 3, 4, 4, 2, 2, 1, 1, true}, "batch3_6x6_k4_even_stride2_same"},
      {{3, 5, 4, 17, 17, 1, 1, 1, 1, 1, 1, false}, "batch3_5x4_c17_k1"},
      {{1, 3, 4, 3, 2, 5, 5, 1, 1, 1, 1, true}, "batch1_kernel_larger_than_image_same"},
  };
}

Conv2dDesc desc_of(const naive::Conv& p, bool bias, Activation act = {}) {
  Conv2dDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = p.f;
  d.kernel_h = p.kh, d.kernel_w = p.kw, d.stride_h = p.sh, d.stride_w = p.sw, d.dilation_h = p.dh, d.dilation_w = p.dw;
  d.padding = p.same ? Padding::Same : Padding::Valid;
  d.bias = bias;
  d.activation = act;
  return d;
}

class Conv2dTest : public ::testing::TestWithParam<std::tuple<ConvCase, ActivationLayout>> {};

TEST_P(Conv2dTest, ForwardAndBackwardMatchTheF64Loops) {
  const auto& [c, layout] = GetParam();
  const naive::Conv& p = c.p;
  CpuKernels kernels({0, layout});
  Conv2dOp op(kernels, desc_of(p, true));
  naive::Pad r = p.rows(), q = p.cols();
  ASSERT_EQ(op.out_h(), r.out);
  ASSERT_EQ(op.out_w(), q.out);

  auto x = random_data(p.n * p.h * p.w * p.c, 1);
  auto w = random_data(p.kh * p.kw * p.c * p.f, 2);
  auto b = random_data(p.f, 3);
  std::vector<float> y(p.n * r.out * q.out * p.f, NAN);
  op.forward(x.data(), w.data(), b.data(), y.data());
  test::expect_within_bound(y, naive::conv2d(p, x.d, w.d, &b.d), "y");

  auto dy = random_data(y.size(), 4);
  std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(p.f, NAN);
  op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  naive::ConvGrads g = naive::conv2d_backward(p, x.d, w.d, dy.d);
  test::expect_within_bound(dx, g.dx, "dx");
  test::expect_within_bound(dw, g.dw, "dw");
  test::expect_within_bound(db, g.db, "db");
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dTest,
                         ::testing::Combine(::testing::ValuesIn(conv_cases()),
                                            ::testing::Values(ActivationLayout::Nhwc, ActivationLayout::Any)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) == ActivationLayout::Nhwc ? "_nhwc" : "_any");
                         });

TEST(Conv2d, WithoutBiasAndWithoutInputGradient) {
  naive::Conv p{3, 5, 6, 3, 4, 3, 3, 2, 1, 1, 1, true};
  CpuKernels kernels;
  Conv2dOp op(kernels, desc_of(p, false));
  auto x = random_data(p.n * p.h * p.w * p.c, 11);
  auto w = random_data(p.kh * p.kw * p.c * p.f, 12);
  std::vector<float> y(p.n * op.out_h() * op.out_w() * p.f);
  op.forward(x.data(), w.data(), nullptr, y.data());
  test::expect_within_bound(y, naive::conv2d(p, x.d, w.d, nullptr), "y");
  auto dy = random_data(y.size(), 13);
  std::vector<float> dw(w.size(), NAN);
  op.backward(x.data(), w.data(), dy.data(), nullptr, dw.data(), nullptr);  // a first layer: no dx
  test::expect_within_bound(dw, naive::conv2d_backward(p, x.d, w.d, dy.d).dw, "dw");
}

// The fused post-op: y = act(conv + b). The pre-activation's error (bounded as above) passes through
// act, whose slope is at most 1.13 (gelu); oneDNN's approximations of tanh/exp/erf add a few ulp of y.
TEST(Conv2d, FusedActivationsApplyAfterTheBias) {
  naive::Conv p{3, 6, 5, 3, 5, 3, 3, 1, 1, 1, 1, true};
  auto x = random_data(p.n * p.h * p.w * p.c, 21, -2, 2);
  auto w = random_data(p.kh * p.kw * p.c * p.f, 22);
  auto b = random_data(p.f, 23);
  naive::Result z = naive::conv2d(p, x.d, w.d, &b.d);
  for (Activation act : {Activation::relu(), Activation::leaky_relu(0.2f), Activation::tanh(), Activation::sigmoid(),
                         Activation::gelu(), Activation::gelu_tanh()}) {
    CpuKernels kernels;
    Conv2dOp op(kernels, desc_of(p, true, act));
    std::vector<float> y(z.value.size());
    op.forward(x.data(), w.data(), b.data(), y.data());
    naive::Vec want(y.size()), tol(y.size());
    for (size_t i = 0; i < y.size(); ++i) {
      want[i] = naive::activation(int(act.kind), act.alpha, z.value[i]);
      tol[i] =
          1.13 * test::gamma_bound(z.terms + 2) * z.magnitude[i] + 8 * test::kUnitRoundoff * (std::abs(want[i]) + 1e-3);
    }
    test::expect_within(y, want, tol, "conv2d + " + act.name());
  }
}

// How the step differentiates a fused layer: y = relu(conv + b) is all the forward keeps; the backward
// takes relu' from y (EltwiseOp::backward_from_output), then the conv's backward.
TEST(Conv2d, FusedReluForwardThenBackwardFromTheOutput) {
  naive::Conv p{3, 5, 6, 17, 4, 3, 3, 1, 1, 1, 1, true};
  CpuKernels kernels;
  Conv2dOp op(kernels, desc_of(p, true, Activation::relu()));
  auto x = random_data(p.n * p.h * p.w * p.c, 31), w = random_data(p.kh * p.kw * p.c * p.f, 32);
  auto b = random_data(p.f, 33), dy = random_data(p.n * p.h * p.w * p.f, 34);
  std::vector<float> y(dy.size()), dz(dy.size()), dx(x.size()), dw(w.size()), db(p.f);
  op.forward(x.data(), w.data(), b.data(), y.data());
  EltwiseOp relu(kernels, {Activation::relu(), int64_t(y.size())});
  relu.backward_from_output(y.data(), dy.data(), dz.data());
  op.backward(x.data(), w.data(), dz.data(), dx.data(), dw.data(), db.data());

  naive::Result z = naive::conv2d(p, x.d, w.d, &b.d);
  naive::Vec dz_want(dy.size());
  for (size_t i = 0; i < dz_want.size(); ++i) dz_want[i] = z.value[i] > 0 ? dy.d[i] : 0;
  // Where z is within rounding of 0 the two sides may disagree on the sign: skip those few.
  const double g = test::gamma_bound(z.terms + 2);
  for (size_t i = 0; i < dz_want.size(); ++i) {
    if (std::abs(z.value[i]) > g * z.magnitude[i]) {
      EXPECT_EQ(dz[i], float(dz_want[i])) << "dz element " << i;
    }
  }
  naive::ConvGrads grads = naive::conv2d_backward(p, x.d, w.d, test::as_data(naive::Vec(dz.begin(), dz.end())).d);
  test::expect_within_bound(dx, grads.dx, "dx");
  test::expect_within_bound(dw, grads.dw, "dw");
  test::expect_within_bound(db, grads.db, "db");
}

TEST(Conv2d, ChessLayersUseOptimizedKernelsNotTheReference) {
  // The reference kernel takes minutes on these shapes; any implementation whose name starts with
  // "ref" would make training unusable.
  CpuKernels kernels;
  for (int64_t in : {24, 64}) {
    Conv2dDesc d;
    d.batch = 512, d.height = 8, d.width = 8, d.in_channels = in, d.filters = 64, d.kernel_h = 3, d.kernel_w = 3;
    d.padding = Padding::Same;
    d.activation = Activation::relu();
    Conv2dOp op(kernels, d);
    for (const std::string& impl :
         {op.implementation_forward(), op.implementation_backward_data(), op.implementation_backward_weights()})
      EXPECT_NE(impl.rfind("ref", 0), 0u) << d.to_string() << ": " << impl;
  }
}

}  // namespace
}  // namespace pipec::train

namespace pipec::train {
namespace {

// A stride can leave the input's last rows or columns without a window (valid padding on 4 rows with a
// 1x1 kernel and stride 2 reads rows 0 and 2). oneDNN 2.6's strided 1x1 kernels then wrote past a buffer
// of their own (valgrind saw it), and on 2 threads gave a wrong kernel gradient on some calls (found by
// tests/train_difftest, seed 34: conv2d(3, 1, strides = [2, 1]) on 4x4x3). Conv2dOp now gives oneDNN the
// rows and columns the windows reach only: every one of many calls matches the f64 loops, and the
// others get a zero input gradient.
TEST(Conv2d, StrideLeavingRowsUnreachedGivesTheSameGradientsOnEveryCall) {
  const std::vector<naive::Conv> shapes = {
      {1, 4, 4, 3, 3, 1, 1, 2, 1},  // the difftest's case
      {2, 4, 6, 3, 8, 1, 1, 2, 2},
      {2, 6, 6, 2, 3, 3, 3, 2, 2},
      {2, 4, 4, 3, 3, 1, 1, 2, 2, 1, 1, true},  // same padding: ceil(4 / 2) windows of 1 reach rows 0, 2
      {1, 7, 5, 1, 2, 2, 2, 1, 1, 2, 2},        // dilation 2: a 3x3 window on 7 rows reaches all of them
  };
  for (int threads : {1, 2})
    for (const naive::Conv& p : shapes) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, " << p.n << "x" << p.h << "x" << p.w << "x" << p.c
                                        << " -> " << p.f << ", kernel " << p.kh << "x" << p.kw << ", stride " << p.sh
                                        << "x" << p.sw << (p.same ? " same" : " valid"));
      CpuKernels kernels(CpuKernelOptions{threads, ActivationLayout::Nhwc, ConvAlgorithm::Direct});
      Conv2dOp op(kernels, desc_of(p, true));
      const naive::Pad r = p.rows(), q = p.cols();
      auto x = random_data(p.n * p.h * p.w * p.c, 51);
      auto w = random_data(p.kh * p.kw * p.c * p.f, 52);
      auto b = random_data(p.f, 53);
      std::vector<float> y(p.n * r.out * q.out * p.f, NAN);
      op.forward(x.data(), w.data(), b.data(), y.data());
      test::expect_within_bound(y, naive::conv2d(p, x.d, w.d, &b.d), "y");
      auto dy = random_data(y.size(), 54);
      const naive::ConvGrads g = naive::conv2d_backward(p, x.d, w.d, dy.d);
      for (int call = 0; call < 20 && !::testing::Test::HasFailure(); ++call) {
        std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(p.f, NAN);
        op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
        test::expect_within_bound(dx, g.dx, "dx");
        test::expect_within_bound(dw, g.dw, "dw");
        test::expect_within_bound(db, g.db, "db");
      }
    }
}

}  // namespace
}  // namespace pipec::train

// Upsample2dOp and SoftmaxOp against f64 loops written here: nearest and bilinear (half-pixel centres,
// edges clamped, as tf.image.resize), whole and odd factors; softmax over the middle of [outer, len,
// inner] with large logits (the max is subtracted), and both backwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/train/dnnl/softmax.h"
#include "runtime/train/dnnl/upsample2d.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

struct Tap {  // an output coordinate's two input coordinates and the weight of the second
  int64_t lo, hi;
  double w;
};

std::vector<Tap> taps(int64_t in, int64_t out, bool bilinear) {
  std::vector<Tap> t(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    if (!bilinear) {
      t[o] = {o * in / out, o * in / out, 0.0};
      continue;
    }
    const double s = (o + 0.5) * double(in) / double(out) - 0.5;
    const double f = std::floor(s);
    t[o] = {std::clamp<int64_t>(int64_t(f), 0, in - 1), std::clamp<int64_t>(int64_t(f) + 1, 0, in - 1), s - f};
  }
  return t;
}

struct UpCase {
  Upsample2dDesc d;
  const char* name;
};
void PrintTo(const UpCase& c, std::ostream* os) { *os << c.name; }

class Upsample2dTest : public ::testing::TestWithParam<UpCase> {};

TEST_P(Upsample2dTest, ForwardAndBackwardMatchTheF64Loops) {
  const Upsample2dDesc& d = GetParam().d;
  CpuKernels kernels;
  Upsample2dOp op(kernels, d);
  const int64_t c = d.channels, in_n = d.batch * d.height * d.width * c, out_n = d.batch * d.out_h * d.out_w * c;
  auto x = test::random_data(static_cast<size_t>(in_n), 91);
  auto dy = test::random_data(static_cast<size_t>(out_n), 92);
  std::vector<float> y(static_cast<size_t>(out_n), NAN), dx(static_cast<size_t>(in_n), NAN);
  op.forward(x.data(), y.data());
  op.backward(dy.data(), dx.data());
  const auto ty = taps(d.height, d.out_h, d.bilinear), tx = taps(d.width, d.out_w, d.bilinear);
  std::vector<double> want_y(static_cast<size_t>(out_n), 0), want_dx(static_cast<size_t>(in_n), 0);
  auto at = [&](int64_t b, int64_t i, int64_t j, int64_t k) { return ((b * d.height + i) * d.width + j) * c + k; };
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t oy = 0; oy < d.out_h; ++oy)
      for (int64_t ox = 0; ox < d.out_w; ++ox)
        for (int64_t k = 0; k < c; ++k) {
          const Tap& Y = ty[oy];
          const Tap& X = tx[ox];
          const int64_t o = ((b * d.out_h + oy) * d.out_w + ox) * c + k;
          const double w[4] = {(1 - Y.w) * (1 - X.w), (1 - Y.w) * X.w, Y.w * (1 - X.w), Y.w * X.w};
          const int64_t src[4] = {at(b, Y.lo, X.lo, k), at(b, Y.lo, X.hi, k), at(b, Y.hi, X.lo, k),
                                  at(b, Y.hi, X.hi, k)};
          for (int q = 0; q < 4; ++q) {
            want_y[o] += w[q] * x.f[src[q]];
            want_dx[src[q]] += w[q] * dy.f[o];
          }
        }
  for (int64_t i = 0; i < out_n; ++i) EXPECT_NEAR(y[i], want_y[i], 1e-5) << "y at " << i;
  for (int64_t i = 0; i < in_n; ++i) EXPECT_NEAR(dx[i], want_dx[i], 1e-4) << "dx at " << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Upsample2dTest,
                         ::testing::Values(UpCase{{2, 3, 4, 5, 6, 8, false}, "nearest_x2"},
                                           UpCase{{1, 2, 3, 1, 6, 3, false}, "nearest_x3_by_1"},
                                           UpCase{{2, 3, 4, 5, 6, 8, true}, "bilinear_x2"},
                                           UpCase{{1, 4, 3, 3, 12, 9, true}, "bilinear_x3"},
                                           UpCase{{3, 1, 1, 2, 2, 2, true}, "bilinear_from_one_pixel"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Softmax, ForwardAndBackwardMatchTheF64Loops) {
  for (SoftmaxDesc d : {SoftmaxDesc{6, 10, 1}, SoftmaxDesc{2, 7, 5}, SoftmaxDesc{1, 1, 3}, SoftmaxDesc{4, 32, 1}}) {
    SCOPED_TRACE(d.to_string());
    CpuKernels kernels;
    SoftmaxOp op(kernels, d);
    const int64_t n = d.outer * d.len * d.inner;
    auto x = test::random_data(static_cast<size_t>(n), 93, -3, 3);
    x.f[0] += 1e4f;  // a large logit: without the max subtracted, exp overflows
    auto dy = test::random_data(static_cast<size_t>(n), 94);
    std::vector<float> y(static_cast<size_t>(n), NAN), dx(static_cast<size_t>(n), NAN);
    op.forward(x.data(), y.data());
    op.backward(y.data(), dy.data(), dx.data());
    for (int64_t o = 0; o < d.outer; ++o)
      for (int64_t i = 0; i < d.inner; ++i) {
        auto at = [&](int64_t l) { return (o * d.len + l) * d.inner + i; };
        double m = -INFINITY, sum = 0, dot = 0;
        for (int64_t l = 0; l < d.len; ++l) m = std::max(m, double(x.f[at(l)]));
        for (int64_t l = 0; l < d.len; ++l) sum += std::exp(double(x.f[at(l)]) - m);
        for (int64_t l = 0; l < d.len; ++l) dot += double(dy.f[at(l)]) * double(y[at(l)]);
        for (int64_t l = 0; l < d.len; ++l) {
          const double want = std::exp(double(x.f[at(l)]) - m) / sum;
          EXPECT_NEAR(y[at(l)], want, 1e-6) << "y at " << at(l);
          EXPECT_NEAR(dx[at(l)], double(y[at(l)]) * (double(dy.f[at(l)]) - dot), 1e-6) << "dx at " << at(l);
        }
      }
  }
}

}  // namespace
}  // namespace pipec::train

// Pool2dOp against the f64 loops: TensorFlow's `same` padding (max ignores it, avg excludes it from the
// count), strides different from the window, non-square images, odd channels.
#include "runtime/train/dnnl/pool2d.h"

#include <gtest/gtest.h>

#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

struct PoolCase {
  naive::Pool p;
  const char* name;
};
void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

std::vector<PoolCase> cases() {
  std::vector<PoolCase> out;
  for (bool max : {true, false}) {
    out.push_back({{1, 5, 7, 3, 2, 2, 2, 2, true, max}, max ? "max_batch1_5x7_2x2_same" : "avg_batch1_5x7_2x2_same"});
    out.push_back(
        {{3, 6, 5, 17, 3, 3, 2, 2, true, max}, max ? "max_batch3_3x3_stride2_same" : "avg_batch3_3x3_stride2_same"});
    out.push_back({{3, 7, 4, 1, 3, 2, 1, 1, false, max}, max ? "max_3x2_stride1_valid" : "avg_3x2_stride1_valid"});
    out.push_back({{2, 5, 5, 3, 1, 1, 3, 3, true, max}, max ? "max_1x1_stride3_same" : "avg_1x1_stride3_same"});
    out.push_back({{3, 4, 6, 3, 4, 6, 1, 1, false, max}, max ? "max_global" : "avg_global"});
  }
  return out;
}

class Pool2dTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(Pool2dTest, ForwardAndBackwardMatchTheF64Loops) {
  const naive::Pool& p = GetParam().p;
  CpuKernels kernels;
  Pool2dDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.channels = p.c, d.kind = p.max ? PoolKind::Max : PoolKind::Avg;
  d.size_h = p.kh, d.size_w = p.kw, d.stride_h = p.sh, d.stride_w = p.sw;
  d.padding = p.same ? Padding::Same : Padding::Valid;
  Pool2dOp op(kernels, d);
  naive::Pad r = p.rows(), q = p.cols();
  ASSERT_EQ(op.out_h(), r.out);
  ASSERT_EQ(op.out_w(), q.out);
  // Distinct values (a shuffled ramp), so every window has one maximum.
  std::vector<double> ramp(p.n * p.h * p.w * p.c);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = (double(i) - ramp.size() / 2.0) / 64.0;
  std::shuffle(ramp.begin(), ramp.end(), std::mt19937(61));
  test::Data x = test::as_data(ramp);
  std::vector<float> y(p.n * r.out * q.out * p.c, NAN);
  op.forward(x.data(), y.data());
  naive::Result want = naive::pool(p, x.d);
  test::expect_within_bound(y, want, "y");  // exact for max (magnitude 0)

  auto dy = test::random_data(y.size(), 62);
  std::vector<float> dx(x.size(), NAN);
  op.backward(dy.data(), dx.data());
  test::expect_within_bound(dx, naive::pool_backward(p, x.d, dy.d), "dx");
}

INSTANTIATE_TEST_SUITE_P(Shapes, Pool2dTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Pool2d, AvgWithSamePaddingDividesByTheRealPixelsOnly) {
  // 1x3 image, 1x2 window, stride 2, same: outputs at columns {0, 1} and {2, padding}. TensorFlow gives
  // (1 + 2) / 2 and 4 / 1 (not 4 / 2).
  CpuKernels kernels;
  Pool2dDesc d;
  d.batch = 1, d.height = 1, d.width = 3, d.channels = 1, d.kind = PoolKind::Avg;
  d.size_h = 1, d.size_w = 2, d.stride_h = 1, d.stride_w = 2, d.padding = Padding::Same;
  Pool2dOp op(kernels, d);
  float x[3] = {1, 2, 4}, y[2] = {0, 0};
  op.forward(x, y);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], 4.0f);
}

}  // namespace
}  // namespace pipec::train

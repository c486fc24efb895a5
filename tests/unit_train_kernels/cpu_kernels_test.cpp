// The shared state: primitives shared between equal layers, weights reordered once per step, the thread
// count set per call without leaking into the caller's OpenMP setting.
#include "runtime/train/dnnl/cpu_kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <vector>

#include "runtime/train/dnnl/conv2d.h"
#include "runtime/train/dnnl/dense.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

using test::random_data;

Conv2dDesc conv(int64_t filters) {
  Conv2dDesc d;
  d.batch = 3, d.height = 6, d.width = 5, d.in_channels = 3, d.filters = filters, d.kernel_h = 3, d.kernel_w = 3;
  d.padding = Padding::Same;
  return d;
}

TEST(CpuKernels, EqualLayersShareOnePrimitiveSet) {
  CpuKernels k;
  Conv2dOp a(k, conv(4)), b(k, conv(4));
  EXPECT_EQ(k.cached_primitive_sets(), 1u);
  Conv2dOp c(k, conv(5));
  EXPECT_EQ(k.cached_primitive_sets(), 2u);
  Conv2dDesc relu = conv(4);
  relu.activation = Activation::relu();
  Conv2dOp d(k, relu);  // a post-op is a different primitive
  EXPECT_EQ(k.cached_primitive_sets(), 3u);
}

// A training step: forward, backward, the optimizer writes the weights in place, weights_changed(),
// next step. Each step must see the weights as they are then.
TEST(CpuKernels, WeightsChangedOncePerStepIsSeenByTheNextForwardAndBackward) {
  CpuKernels k;
  naive::Conv p{3, 6, 5, 3, 4, 3, 3, 1, 1, 1, 1, true};
  Conv2dOp op(k, conv(4));
  auto x = random_data(p.n * p.h * p.w * p.c, 101);
  auto w = random_data(p.kh * p.kw * p.c * p.f, 102);
  auto b = random_data(p.f, 103);
  auto dy = random_data(p.n * p.h * p.w * p.f, 104);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(p.f);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    op.forward(x.data(), w.data(), b.data(), y.data());
    test::expect_within_bound(y, naive::conv2d(p, x.d, w.d, &b.d), "y");
    op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    test::expect_within_bound(dx, naive::conv2d_backward(p, x.d, w.d, dy.d).dx, "dx");
    for (size_t i = 0; i < w.size(); ++i) {  // the optimizer, in place
      w.f[i] -= 0.1f * dw[i];
      w.d[i] = w.f[i];
    }
    k.weights_changed();
  }
}

// Dense's backward-data often wants the forward's weight layout and then shares its reordered copy.
TEST(CpuKernels, DenseWeightsChangedOncePerStep) {
  CpuKernels k;
  DenseDesc d;
  d.rows = 8, d.in = 4106, d.out = 256;
  DenseOp op(k, d);
  auto x = random_data(d.rows * d.in, 131), w = random_data(d.in * d.out, 132), b = random_data(d.out, 133);
  auto dy = random_data(d.rows * d.out, 134);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(d.out);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    op.forward(x.data(), w.data(), b.data(), y.data());
    test::expect_within_bound(y, naive::dense(d.rows, d.in, d.out, x.d, w.d, &b.d), "y");
    op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    test::expect_within_bound(dx, naive::dense_backward(d.rows, d.in, d.out, x.d, w.d, dy.d).dx, "dx");
    for (size_t i = 0; i < w.size(); ++i) {
      w.f[i] -= 0.1f * dw[i];
      w.d[i] = w.f[i];
    }
    k.weights_changed();
  }
}

TEST(CpuKernels, AnotherWeightBufferIsReorderedWithoutBeingTold) {
  CpuKernels k;
  naive::Conv p{3, 6, 5, 3, 4, 3, 3, 1, 1, 1, 1, true};
  Conv2dOp op(k, conv(4));
  auto x = random_data(p.n * p.h * p.w * p.c, 111);
  auto w1 = random_data(p.kh * p.kw * p.c * p.f, 112), w2 = random_data(w1.size(), 113);
  auto b = random_data(p.f, 114);
  std::vector<float> y(p.n * p.h * p.w * p.f);
  op.forward(x.data(), w1.data(), b.data(), y.data());
  op.forward(x.data(), w2.data(), b.data(), y.data());
  test::expect_within_bound(y, naive::conv2d(p, x.d, w2.d, &b.d), "y with the second weights");
}

TEST(CpuKernels, TheCallersOpenMpThreadCountIsRestored) {
  CpuKernels k({1});
  EXPECT_EQ(k.threads(), 1);
  DenseDesc d;
  d.rows = 64, d.in = 33, d.out = 17;
  DenseOp op(k, d);
  omp_set_num_threads(3);
  auto x = random_data(d.rows * d.in, 121), w = random_data(d.in * d.out, 122), b = random_data(d.out, 123);
  std::vector<float> y(d.rows * d.out);
  op.forward(x.data(), w.data(), b.data(), y.data());
  EXPECT_EQ(omp_get_max_threads(), 3);
  test::expect_within_bound(y, naive::dense(d.rows, d.in, d.out, x.d, w.d, &b.d), "y");
}

TEST(CpuKernels, ReportsTheInstructionSetAndVersion) {
  EXPECT_EQ(CpuKernels::version().rfind("2.", 0), 0u);
  EXPECT_NE(CpuKernels::isa(), "other");
}

}  // namespace
}  // namespace pipec::train

namespace pipec::train {
namespace {

// parallel_rows covers [0, rows) once, in contiguous parts, one per thread (fewer when rows are fewer),
// and an exception in a part reaches the caller.
TEST(ParallelRows, CoversEveryRowOnceInContiguousParts) {
  for (int threads : {1, 2, 3}) {
    for (int64_t rows : {0, 1, 2, 7, 512}) {
      std::vector<int> seen(static_cast<size_t>(rows), 0);
      std::atomic<int> calls{0};
      parallel_rows(threads, rows, [&](int64_t begin, int64_t end) {
        ++calls;
        EXPECT_LT(begin, end);
        for (int64_t r = begin; r < end; ++r) ++seen[static_cast<size_t>(r)];
      });
      for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)], 1) << threads << " " << rows;
      EXPECT_EQ(calls.load(), std::min<int64_t>(threads, rows));
    }
  }
  EXPECT_THROW(parallel_rows(2, 10,
                             [](int64_t begin, int64_t) {
                               if (begin > 0) throw std::runtime_error("part");
                             }),
               std::runtime_error);
}

}  // namespace
}  // namespace pipec::train

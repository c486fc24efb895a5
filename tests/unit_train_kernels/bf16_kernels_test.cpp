// CpuKernelOptions::bf16: conv2d, conv2d_transpose and dense reading their operands in bf16 (oneDNN's
// bf16 kernels, what mixed_bf16 runs on CPUs with AVX512_BF16), against the f64 loops, on random shapes.
//
// Tolerance. The operands are bf16 values (mixed_bf16's step graph rounds every one of them before a
// layer reads it), so each product of two of them is exact in f32 (8 + 8 significand bits) and the
// kernel's only roundings are those of its f32 sums: the bound of the f32 kernels holds unchanged,
// gamma(terms + 2) of the sum of |terms| (train_kernel_test_util.h). A kernel that read its operands
// rounded a second time, or dropped a block, fails it by orders of magnitude.
//
// oneDNN has bf16 kernels on AVX-512 CPUs only (emulating the instructions where they are missing);
// elsewhere the tests skip, naming the CPU: mixed_bf16 runs on the f32 kernels there.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "runtime/core/half.h"
#include "runtime/train/dnnl/conv2d.h"
#include "runtime/train/dnnl/conv2d_transpose.h"
#include "runtime/train/dnnl/dense.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

// Random values in [lo, hi) rounded to bf16, as the step graph hands them to a layer.
test::Data bf16_data(size_t n, uint32_t seed, double lo, double hi) {
  test::Data d = test::random_data(n, seed, lo, hi);
  for (size_t i = 0; i < n; ++i) {
    d.f[i] = bf16_bits_to_float(float_to_bf16_bits(d.f[i]));
    d.d[i] = d.f[i];
  }
  return d;
}

CpuKernelOptions bf16_options(int threads) {
  CpuKernelOptions o;
  o.threads = threads;
  o.bf16 = true;
  return o;
}

#define SKIP_WITHOUT_BF16_KERNELS()                                                \
  if (!CpuKernels::bf16_kernels_exist())                                           \
  GTEST_SKIP() << "oneDNN has no bf16 kernels for this CPU (" << CpuKernels::isa() \
               << "; they need AVX-512): mixed_bf16 multiplies on the f32 kernels here"

struct Draw {
  std::mt19937 rng;
  explicit Draw(uint32_t seed) : rng(seed) {}
  int64_t range(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
};

TEST(Bf16Kernels, ExistWhereTheCpuHasAvx512) {
  const std::string isa = CpuKernels::isa();
  EXPECT_EQ(CpuKernels::bf16_kernels_exist(), isa.rfind("avx512_core", 0) == 0) << isa;
  EXPECT_EQ(CpuKernels::native_bf16(), isa == "avx512_core_bf16" || isa == "avx512_core_amx") << isa;
}

// 40 random conv2d shapes (windows 1-3 with strides and dilations up to 2, same and valid padding,
// a fused relu half the time, 1 or 2 threads): forward, backward-data, backward-weights and the bias.
TEST(Bf16Kernels, Conv2dMatchesTheF64LoopsOnRandomShapes) {
  SKIP_WITHOUT_BF16_KERNELS();
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    Draw r(seed);
    naive::Conv p{r.range(1, 4), r.range(1, 9), r.range(1, 9), r.range(1, 20), r.range(1, 20), r.range(1, 3),
                  r.range(1, 3), r.range(1, 2), r.range(1, 2), r.range(1, 2),  r.range(1, 2)};
    p.same = r.range(0, 1) == 1;
    // A valid window must fit the image.
    if (!p.same) {
      p.h = std::max(p.h, (p.kh - 1) * p.dh + 1);
      p.w = std::max(p.w, (p.kw - 1) * p.dw + 1);
    }
    const bool relu = r.range(0, 1) == 1;
    CpuKernels kernels(bf16_options(static_cast<int>(r.range(1, 2))));
    Conv2dDesc d;
    d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = p.f;
    d.kernel_h = p.kh, d.kernel_w = p.kw, d.stride_h = p.sh, d.stride_w = p.sw, d.dilation_h = p.dh,
    d.dilation_w = p.dw;
    d.padding = p.same ? Padding::Same : Padding::Valid;
    if (relu) d.activation = Activation::relu();
    Conv2dOp op(kernels, d);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + d.to_string() + " on " + op.implementation_forward());
    EXPECT_FALSE(op.winograd());
    EXPECT_NE(op.implementation_forward().find("bf16"), std::string::npos);
    naive::Pad rows = p.rows(), cols = p.cols();
    auto x = bf16_data(p.n * p.h * p.w * p.c, seed * 7 + 1, -1, 1);
    auto w = bf16_data(p.kh * p.kw * p.c * p.f, seed * 7 + 2, -0.3, 0.3);
    auto b = test::random_data(p.f, seed * 7 + 3, -0.1, 0.1);  // the bias is read in f32
    std::vector<float> y(p.n * rows.out * cols.out * p.f, NAN);
    op.forward(x.data(), w.data(), b.data(), y.data());
    naive::Result want = naive::conv2d(p, x.d, w.d, &b.d);
    if (relu)
      for (double& v : want.value) v = std::max(v, 0.0);
    test::expect_within_bound(y, want, "y");

    auto dy = bf16_data(y.size(), seed * 7 + 4, -1, 1);
    std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(p.f, NAN);
    op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    naive::ConvGrads g = naive::conv2d_backward(p, x.d, w.d, dy.d);
    test::expect_within_bound(dx, g.dx, "dx");
    test::expect_within_bound(dw, g.dw, "dw");
    test::expect_within_bound(db, g.db, "db");
  }
}

// 30 random conv2d_transpose shapes: windows 1-4, strides 1-3 (windows smaller than the stride too).
TEST(Bf16Kernels, Conv2dTransposeMatchesTheF64LoopsOnRandomShapes) {
  SKIP_WITHOUT_BF16_KERNELS();
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    Draw r(seed + 1000);
    naive::Transpose p{r.range(1, 3), r.range(1, 6), r.range(1, 6), r.range(1, 17), r.range(1, 17),
                       r.range(1, 4), r.range(1, 4), r.range(1, 3), r.range(1, 3)};
    p.same = r.range(0, 1) == 1;
    CpuKernels kernels(bf16_options(static_cast<int>(r.range(1, 2))));
    Conv2dTransposeDesc d;
    d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = p.f;
    d.kernel_h = p.kh, d.kernel_w = p.kw, d.stride_h = p.sh, d.stride_w = p.sw;
    d.padding = p.same ? Padding::Same : Padding::Valid;
    Conv2dTransposeOp op(kernels, d);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + d.to_string() + " on " + op.implementation_forward());
    naive::Pad rows = p.rows(), cols = p.cols();
    auto x = bf16_data(p.n * p.h * p.w * p.c, seed * 5 + 1, -1, 1);
    auto w = bf16_data(p.kh * p.kw * p.f * p.c, seed * 5 + 2, -0.3, 0.3);
    auto b = test::random_data(p.f, seed * 5 + 3, -0.1, 0.1);
    std::vector<float> y(p.n * rows.out * cols.out * p.f, NAN);
    op.forward(x.data(), w.data(), b.data(), y.data());
    test::expect_within_bound(y, naive::conv2d_transpose(p, x.d, w.d, &b.d), "y");

    auto dy = bf16_data(y.size(), seed * 5 + 4, -1, 1);
    std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(p.f, NAN);
    op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    naive::ConvGrads g = naive::conv2d_transpose_backward(p, x.d, w.d, dy.d);
    test::expect_within_bound(dx, g.dx, "dx");
    test::expect_within_bound(dw, g.dw, "dw");
    test::expect_within_bound(db, g.db, "db");
  }
}

// 30 random dense shapes, up to the chess net's 4106 inputs.
TEST(Bf16Kernels, DenseMatchesTheF64LoopsOnRandomShapes) {
  SKIP_WITHOUT_BF16_KERNELS();
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    Draw r(seed + 2000);
    const int64_t rows = r.range(1, 40), in = seed == 1 ? 4106 : r.range(1, 300), out = r.range(1, 40);
    CpuKernels kernels(bf16_options(static_cast<int>(r.range(1, 2))));
    DenseDesc d;
    d.rows = rows, d.in = in, d.out = out;
    DenseOp op(kernels, d);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + d.to_string() + " on " + op.implementation_forward());
    auto x = bf16_data(rows * in, seed * 3 + 1, -1, 1);
    auto w = bf16_data(in * out, seed * 3 + 2, -0.3, 0.3);
    auto b = test::random_data(out, seed * 3 + 3, -0.1, 0.1);
    std::vector<float> y(rows * out, NAN);
    op.forward(x.data(), w.data(), b.data(), y.data());
    test::expect_within_bound(y, naive::dense(rows, in, out, x.d, w.d, &b.d), "y");
    auto dy = bf16_data(y.size(), seed * 3 + 4, -1, 1);
    std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(out, NAN);
    op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    naive::ConvGrads g = naive::dense_backward(rows, in, out, x.d, w.d, dy.d);
    test::expect_within_bound(dx, g.dx, "dx");
    test::expect_within_bound(dw, g.dw, "dw");
    test::expect_within_bound(db, g.db, "db");
  }
}

// Given f32 values, the op multiplies them rounded to bf16 (to nearest even, as the step graph's round
// nodes): its output is the f64 loops' on the rounded operands, and far from theirs on the given ones.
TEST(Bf16Kernels, ReadTheirOperandsRoundedToBf16) {
  SKIP_WITHOUT_BF16_KERNELS();
  CpuKernels kernels(bf16_options(1));
  DenseDesc d;
  d.rows = 8, d.in = 64, d.out = 4;
  DenseOp op(kernels, d);
  auto x = test::random_data(d.rows * d.in, 7, -1, 1);
  auto w = test::random_data(d.in * d.out, 8, -0.3, 0.3);
  auto b = test::random_data(d.out, 9, -0.1, 0.1);
  test::Data xr = x, wr = w;
  for (test::Data* t : {&xr, &wr})
    for (size_t i = 0; i < t->size(); ++i) t->d[i] = t->f[i] = bf16_bits_to_float(float_to_bf16_bits(t->f[i]));
  std::vector<float> y(d.rows * d.out, NAN);
  op.forward(x.data(), w.data(), b.data(), y.data());
  test::expect_within_bound(y, naive::dense(d.rows, d.in, d.out, xr.d, wr.d, &b.d), "y from the rounded operands");
  const naive::Result unrounded = naive::dense(d.rows, d.in, d.out, x.d, w.d, &b.d);
  // The f32 sums' bound, and how far the output is from the unrounded operands' product: bf16's rounding
  // (2^-9 of each operand) is some hundred times that bound here.
  double largest_gap = 0, largest_bound = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    largest_gap = std::max(largest_gap, std::abs(y[i] - unrounded.value[i]));
    largest_bound = std::max(largest_bound, test::gamma_bound(unrounded.terms + 2) * unrounded.magnitude[i]);
  }
  EXPECT_GT(largest_gap, 20 * largest_bound) << "the op multiplied the f32 values";
}

}  // namespace
}  // namespace pipec::train

// conv2d's algorithm choice (CpuKernelOptions::conv_algorithm): `Auto` takes Winograd's F(4x4, 3x3) for
// 3x3 windows at stride 1 where oneDNN has a kernel for it (AVX-512 CPUs), the direct algorithm
// elsewhere; `Direct` (`pipec run --conv direct`) never takes Winograd.
//
// Tolerance. Winograd transforms a 6x6 tile of the input and the 3x3 kernel, multiplies in the
// transformed space and transforms back: each output mixes the rounding of its whole tile, so its error
// is bounded by the tile's magnitude rather than its own. The bound used here, 1e-5 of the tensor's
// largest f64 magnitude, is over 10x what oneDNN's kernel shows on these shapes (1e-7 to 1e-6 of it) and
// far below what a wrong tile offset or transform gives (an error of the order of an output).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/train/dnnl/conv2d.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

using test::random_data;

bool has_avx512() { return CpuKernels::isa().rfind("avx512_core", 0) == 0; }

Conv2dDesc desc_of(const naive::Conv& p) {
  Conv2dDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = p.f;
  d.kernel_h = p.kh, d.kernel_w = p.kw, d.stride_h = p.sh, d.stride_w = p.sw, d.dilation_h = p.dh, d.dilation_w = p.dw;
  d.padding = p.same ? Padding::Same : Padding::Valid;
  return d;
}

void expect_within_tile_bound(const std::vector<float>& got, const naive::Result& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.value.size()) << what;
  const double largest = *std::max_element(want.magnitude.begin(), want.magnitude.end());
  const double tol = 1e-5 * largest;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double(got[i]) - want.value[i]);
    if (!(err <= tol) && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the f64 loop gives " << want.value[i]
                    << " (error " << err << " > " << tol << ")";
  }
}

TEST(ConvAlgorithm, AutoTakesWinogradFor3x3AtStride1WhereOneDnnHasIt) {
  CpuKernels automatic, direct({0, ActivationLayout::Nhwc, ConvAlgorithm::Direct});
  for (int64_t in : {24, 64}) {  // the chess net's two layers
    const Conv2dDesc d = desc_of({64, 8, 8, in, 64, 3, 3, 1, 1, 1, 1, true});
    Conv2dOp fast(automatic, d), plain(direct, d);
    // Winograd's kernels need AVX-512; on other CPUs oneDNN refuses them and Auto is the direct algorithm.
    EXPECT_EQ(fast.winograd(), has_avx512())
        << d.to_string() << " on " << CpuKernels::isa() << ": " << fast.implementation_forward();
    EXPECT_FALSE(plain.winograd()) << plain.implementation_forward();
    for (const std::string& impl :
         {fast.implementation_forward(), fast.implementation_backward_data(), fast.implementation_backward_weights()})
      EXPECT_NE(impl.rfind("ref", 0), 0u) << d.to_string() << ": " << impl;
  }
  // Strides, dilation and other window sizes are direct whatever the option.
  for (naive::Conv p :
       {naive::Conv{4, 8, 8, 16, 16, 3, 3, 2, 2, 1, 1, true}, naive::Conv{4, 8, 8, 16, 16, 3, 3, 1, 1, 2, 2, true},
        naive::Conv{4, 8, 8, 16, 16, 5, 5, 1, 1, 1, 1, true}}) {
    Conv2dOp op(automatic, desc_of(p));
    EXPECT_FALSE(op.winograd()) << op.desc().to_string() << ": " << op.implementation_forward();
  }
}

// Forward (bias and fused relu included), backward-data, backward-weights and the bias gradient of the
// algorithm Auto picks, against the f64 loops, on the chess net's shapes and an odd image size.
TEST(ConvAlgorithm, AutoMatchesTheF64Loops) {
  for (naive::Conv p :
       {naive::Conv{4, 8, 8, 24, 64, 3, 3, 1, 1, 1, 1, true}, naive::Conv{4, 8, 8, 64, 64, 3, 3, 1, 1, 1, 1, true},
        naive::Conv{3, 7, 5, 16, 32, 3, 3, 1, 1, 1, 1, true}, naive::Conv{2, 9, 10, 32, 16, 3, 3, 1, 1, 1, 1, false}}) {
    CpuKernels kernels;
    Conv2dDesc d = desc_of(p);
    d.activation = Activation::relu();
    Conv2dOp op(kernels, d);
    SCOPED_TRACE(d.to_string() + (op.winograd() ? " (Winograd)" : " (direct)"));
    EXPECT_EQ(op.winograd(), has_avx512());
    naive::Pad r = p.rows(), q = p.cols();
    auto x = random_data(p.n * p.h * p.w * p.c, 41, 0, 1);  // as after a relu
    auto w = random_data(p.kh * p.kw * p.c * p.f, 42, -0.1, 0.1);
    auto b = random_data(p.f, 43, -0.1, 0.1);
    std::vector<float> y(p.n * r.out * q.out * p.f, NAN);
    op.forward(x.data(), w.data(), b.data(), y.data());
    naive::Result z = naive::conv2d(p, x.d, w.d, &b.d);
    naive::Result want_y = z;
    for (double& v : want_y.value) v = std::max(v, 0.0);
    expect_within_tile_bound(y, want_y, "y");

    auto dy = random_data(y.size(), 44, -1e-3, 1e-3);
    std::vector<float> dx(x.size(), NAN), dw(w.size(), NAN), db(p.f, NAN);
    op.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    naive::ConvGrads g = naive::conv2d_backward(p, x.d, w.d, dy.d);
    expect_within_tile_bound(dx, g.dx, "dx");
    expect_within_tile_bound(dw, g.dw, "dw");
    expect_within_tile_bound(db, g.db, "db");
  }
}

// One forward and backward of `op` on the chess net's first layer's data (batch 64): y, dx, dw, db.
struct ConvRun {
  std::vector<float> y, dx, dw, db;
};
ConvRun run_conv(Conv2dOp& op, const naive::Conv& p) {
  const naive::Pad r = p.rows(), q = p.cols();
  auto x = random_data(p.n * p.h * p.w * p.c, 51, 0, 1);
  auto w = random_data(p.kh * p.kw * p.c * p.f, 52, -0.1, 0.1);
  auto b = random_data(p.f, 53, -0.1, 0.1);
  auto dy = random_data(p.n * r.out * q.out * p.f, 54, -1e-3, 1e-3);
  ConvRun out{std::vector<float>(dy.size(), NAN), std::vector<float>(x.size(), NAN), std::vector<float>(w.size(), NAN),
              std::vector<float>(b.size(), NAN)};
  op.forward(x.data(), w.data(), b.data(), out.y.data());
  op.backward(x.data(), w.data(), dy.data(), out.dx.data(), out.dw.data(), out.db.data());
  return out;
}

void expect_bit_equal(const ConvRun& a, const ConvRun& b) {
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.dx, b.dx);
  EXPECT_EQ(a.dw, b.dw);
  EXPECT_EQ(a.db, b.db);
}

// A Winograd layer's first forward and backward each run twice and must repeat bit for bit (where they
// do, here, the layer stays Winograd and later calls give the same bits as the first); at the machine's
// thread count and at 16 threads.
TEST(ConvAlgorithm, WinogradLayersRepeatTheirFirstCalls) {
  const naive::Conv p{64, 8, 8, 24, 64, 3, 3, 1, 1, 1, 1, true};
  for (int threads : {0, 16}) {
    SCOPED_TRACE(threads);
    CpuKernels kernels({threads, ActivationLayout::Nhwc, ConvAlgorithm::Auto});
    Conv2dOp op(kernels, desc_of(p));
    const ConvRun first = run_conv(op, p);
    EXPECT_EQ(op.winograd(), has_avx512()) << op.implementation_forward();
    EXPECT_FALSE(op.winograd_refused());
    expect_bit_equal(run_conv(op, p), first);
  }
}

// Where the two runs differ (made to, as on the Xeon where oneDNN's Winograd did not repeat), the layer
// goes direct on that first call and gives the direct algorithm's bits; a layer of the same shape made
// afterwards is direct from the start; the executor's description says so (train_run_test.cpp).
TEST(ConvAlgorithm, AWinogradLayerThatDoesNotRepeatGoesDirect) {
  const naive::Conv p{64, 8, 8, 24, 64, 3, 3, 1, 1, 1, 1, true};
  CpuKernelOptions differs{0, ActivationLayout::Nhwc, ConvAlgorithm::Auto};
  differs.winograd_differs_for_testing = true;
  CpuKernels kernels(differs), direct({0, ActivationLayout::Nhwc, ConvAlgorithm::Direct});
  Conv2dOp op(kernels, desc_of(p)), plain(direct, desc_of(p));
  EXPECT_EQ(op.winograd(), has_avx512());
  const ConvRun got = run_conv(op, p);
  EXPECT_FALSE(op.winograd());
  EXPECT_EQ(op.winograd_refused(), has_avx512());  // no Winograd to refuse without AVX-512
  EXPECT_EQ(op.implementation_forward(), plain.implementation_forward());
  expect_bit_equal(got, run_conv(plain, p));
  Conv2dOp later(kernels, desc_of(p));
  EXPECT_FALSE(later.winograd()) << later.implementation_forward();
  EXPECT_EQ(later.winograd_refused(), has_avx512());
}

}  // namespace
}  // namespace pipec::train

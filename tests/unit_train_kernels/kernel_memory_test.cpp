// What the kernels hold of their own (KernelMemory), which the memory plan before step 1 counts: known
// when the ops are made, before any call, and equal to what the calls then use. The primitives run in
// oneDNN's user scratchpad mode on one shared scratchpad, with the results of the f64 oracle.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/train/dnnl/conv2d.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/dnnl/dense.h"
#include "runtime/train/dnnl/dnnl_common.h"
#include "runtime/train/dnnl/pool2d.h"
#include "tests/unit_train_kernels/train_kernel_test_util.h"

namespace pipec::train {
namespace {

using test::random_data;

// 16 channels in and 32 out: whole blocks of 8 or 16 channels, so a blocked layout pads nothing and its
// buffers are exactly the tensors' bytes.
constexpr naive::Conv kShape{2, 8, 8, 16, 32, 3, 3, 1, 1, 1, 1, true};

Conv2dDesc desc_of(const naive::Conv& p) {
  Conv2dDesc d;
  d.batch = p.n, d.height = p.h, d.width = p.w, d.in_channels = p.c, d.filters = p.f, d.kernel_h = p.kh,
  d.kernel_w = p.kw;
  d.padding = Padding::Same;
  return d;
}

CpuKernelOptions options(ActivationLayout layout) {
  CpuKernelOptions o;
  o.threads = 2;
  o.activation_layout = layout;
  o.conv_algorithm = ConvAlgorithm::Direct;
  return o;
}

// On the caller's NHWC the primitives read and write the caller's activations: nothing is staged and no
// layer keeps a copy of its input. In oneDNN's own (blocked) layouts the forward's x is a copy the layer
// keeps for backward-weights, and the other activations go through the two shared staging buffers.
TEST(KernelMemory, ALayerKeepsItsInputOnlyInAPrimitivesOwnLayout) {
  const int64_t x_bytes = kShape.n * kShape.h * kShape.w * kShape.c * 4;
  const int64_t y_bytes = kShape.n * kShape.h * kShape.w * kShape.f * 4;
  {
    CpuKernels k(options(ActivationLayout::Nhwc));
    Conv2dOp op(k, desc_of(kShape));
    EXPECT_EQ(op.owned_memory().activations, 0);
    EXPECT_EQ(k.shared_memory().staging, 0);
  }
  CpuKernels k(options(ActivationLayout::Any));
  Conv2dOp op(k, desc_of(kShape));
  if (op.owned_memory().activations == 0) GTEST_SKIP() << "oneDNN chose NHWC for `any` on this CPU";
  EXPECT_EQ(op.owned_memory().activations, x_bytes);
  // Slot 0 holds y (or dx, x-sized), slot 1 dy: y-sized each at most, x-sized at least.
  EXPECT_GE(k.shared_memory().staging, x_bytes + y_bytes);
  EXPECT_LE(k.shared_memory().staging, 2 * y_bytes);
}

// The sizes reported when the ops are made are what their calls grow the shared buffers to, and the
// results are the oracle's with every primitive on the one user-mode scratchpad.
TEST(KernelMemory, SharedBuffersArePlannedBeforeTheFirstCallAtTheSizeTheCallsUse) {
  for (ActivationLayout layout : {ActivationLayout::Nhwc, ActivationLayout::Any}) {
    SCOPED_TRACE(layout_name(layout));
    CpuKernels k(options(layout));
    Conv2dOp conv(k, desc_of(kShape));
    DenseDesc dd;
    dd.rows = 64, dd.in = 48, dd.out = 40;
    DenseOp dense(k, dd);
    Pool2dDesc pd;
    pd.batch = kShape.n, pd.height = kShape.h, pd.width = kShape.w, pd.channels = kShape.f, pd.size_h = 2,
    pd.size_w = 2, pd.stride_h = 2, pd.stride_w = 2;
    Pool2dOp pool(k, pd);
    const KernelMemory planned = k.shared_memory();
    // Max pooling keeps one position per output (u8 for a 2x2 window at most 4 bytes each).
    EXPECT_GE(pool.owned_memory().workspaces, kShape.n * 4 * 4 * kShape.f);
    EXPECT_LE(pool.owned_memory().workspaces, kShape.n * 4 * 4 * kShape.f * 4);

    auto x = random_data(kShape.n * kShape.h * kShape.w * kShape.c, 1);
    auto w = random_data(kShape.kh * kShape.kw * kShape.c * kShape.f, 2);
    auto b = random_data(kShape.f, 3);
    auto dy = random_data(kShape.n * kShape.h * kShape.w * kShape.f, 4);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(b.size());
    conv.forward(x.data(), w.data(), b.data(), y.data());
    conv.backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    test::expect_within_bound(y, naive::conv2d(kShape, x.d, w.d, &b.d), "y");
    const naive::ConvGrads g = naive::conv2d_backward(kShape, x.d, w.d, dy.d);
    test::expect_within_bound(dx, g.dx, "dx");
    test::expect_within_bound(dw, g.dw, "dw");
    std::vector<float> pooled(y.size() / 4), dpooled(pooled.size(), 1.0f), dpool_in(y.size());
    pool.forward(y.data(), pooled.data());
    pool.backward(dpooled.data(), dpool_in.data());
    auto dx2 = random_data(dd.rows * dd.in, 5);
    auto dw2 = random_data(dd.in * dd.out, 6);
    auto db2 = random_data(dd.out, 7);
    std::vector<float> dy2(dd.rows * dd.out, 0.5f), y2(dy2.size()), gx(dx2.size()), gw(dw2.size()), gb(db2.size());
    dense.forward(dx2.data(), dw2.data(), db2.data(), y2.data());
    dense.backward(dx2.data(), dw2.data(), dy2.data(), gx.data(), gw.data(), gb.data());

    CpuKernels::Impl& impl = k.impl();
    EXPECT_EQ(static_cast<int64_t>(impl.staging.allocated_bytes()), planned.staging);
    const dnnl::memory& scratch = impl.scratchpad.get(impl.engine);
    EXPECT_EQ(scratch ? static_cast<int64_t>(scratch.get_desc().get_size()) : 0, planned.scratchpad);
    // Nothing the calls made changed the plan.
    EXPECT_EQ(k.shared_memory().staging, planned.staging);
    EXPECT_EQ(k.shared_memory().scratchpad, planned.scratchpad);
  }
}

// Weights in a primitive's own layout are kept per layer (reordered once per step), as are their
// gradients: the reported bytes are the weights' (whole blocks here), at most three copies.
TEST(KernelMemory, ReorderedWeightsAreCountedPerLayer) {
  CpuKernels k(options(ActivationLayout::Any));
  Conv2dOp a(k, desc_of(kShape)), b(k, desc_of(kShape));
  const int64_t w_bytes = kShape.kh * kShape.kw * kShape.c * kShape.f * 4;
  const int64_t one = a.owned_memory().weights;
  EXPECT_EQ(one % w_bytes, 0) << one;
  EXPECT_LE(one, 3 * w_bytes);
  // Two layers of one shape share primitives, not weights.
  EXPECT_EQ(a.owned_memory().weights + b.owned_memory().weights, 2 * one);
}

}  // namespace
}  // namespace pipec::train

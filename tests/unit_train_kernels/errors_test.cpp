// Shapes the kernels cannot run are a TrainKernelError naming the op and the problem, never a crash.
#include <gtest/gtest.h>

#include "runtime/train/dnnl/batch_norm.h"
#include "runtime/train/dnnl/conv2d.h"
#include "runtime/train/dnnl/dense.h"
#include "runtime/train/dnnl/eltwise.h"
#include "runtime/train/dnnl/layer_norm.h"
#include "runtime/train/dnnl/pool2d.h"

namespace pipec::train {
namespace {

template <class Make>
std::string error_of(Make make) {
  try {
    make();
  } catch (const TrainKernelError& e) {
    return e.what();
  }
  return "(no error)";
}

Conv2dDesc small_conv() {
  Conv2dDesc d;
  d.batch = 3, d.height = 5, d.width = 7, d.in_channels = 17, d.filters = 4, d.kernel_h = 2, d.kernel_w = 2;
  return d;
}

TEST(TrainKernelErrors, InvalidShapesNameTheOpAndTheProblem) {
  CpuKernels k;
  Conv2dDesc d = small_conv();
  d.in_channels = 0;
  EXPECT_EQ(error_of([&] { Conv2dOp op(k, d); }),
            "conv2d [3, 5, 7, 0] -> 4 kernel 2x2 valid: every size must be at least 1");
  d = small_conv();
  d.stride_w = 0;
  EXPECT_EQ(error_of([&] { Conv2dOp op(k, d); }),
            "conv2d [3, 5, 7, 17] -> 4 kernel 2x2 stride 1x0 valid: strides and dilations must be at least 1");
  d = small_conv();
  d.kernel_h = 6;
  EXPECT_EQ(error_of([&] { Conv2dOp op(k, d); }),
            "conv2d [3, 5, 7, 17] -> 4 kernel 6x2 valid: the output is empty: the window is larger than the input with "
            "valid padding");
  Pool2dDesc p;
  p.height = 2, p.width = 2, p.size_h = 3, p.size_w = 3, p.stride_h = 3, p.stride_w = 3;
  EXPECT_EQ(
      error_of([&] { Pool2dOp op(k, p); }),
      "max_pool2d [1, 2, 2, 1] size 3x3 stride 3x3 valid: the output is empty: the window is larger than the input "
      "with valid padding");
  EXPECT_EQ(error_of([&] { EltwiseOp op(k, {Activation::none(), 10}); }), "none x 10: no activation to apply");
  BatchNormDesc bn;
  bn.epsilon = -1;
  EXPECT_EQ(error_of([&] { BatchNormOp op(k, bn); }),
            "batch_norm [1, 1, 1, 1] epsilon -1: epsilon must not be negative");
}

// oneDNN 2.6 divides by zero (SIGFPE) creating a pool or an inner product over 2^32 elements, and a
// 2^80-element convolution overflows its sizes silently: the kernels refuse such tensors first.
TEST(TrainKernelErrors, TensorsOneDnnCannotIndexAreRefusedBeforeItSeesThem) {
  CpuKernels k;
  Pool2dDesc p;
  p.height = 65536, p.width = 65536, p.size_h = 65536, p.size_w = 65536, p.stride_h = 65536, p.stride_w = 65536;
  EXPECT_EQ(error_of([&] { Pool2dOp op(k, p); }),
            "max_pool2d [1, 65536, 65536, 1] size 65536x65536 stride 65536x65536 valid: the input tensor [1, 1, 65536, "
            "65536] has more than 2^31 - 1 elements, the most oneDNN 2.6 handles in one tensor (split the batch)");
  DenseDesc dense;
  dense.rows = int64_t(1) << 32, dense.in = 16, dense.out = 4;
  EXPECT_NE(error_of([&] { DenseOp op(k, dense); }).find("dense [4294967296, 16] -> 4: the input tensor"),
            std::string::npos);
  Conv2dDesc c = small_conv();
  c.batch = int64_t(1) << 40, c.height = 1 << 20, c.width = 1 << 20;
  EXPECT_NE(error_of([&] { Conv2dOp op(k, c); }).find("more than 2^31 - 1 elements"), std::string::npos);
  LayerNormDesc ln;
  ln.rows = int64_t(1) << 31, ln.features = 1;
  EXPECT_NE(error_of([&] { LayerNormOp op(k, ln); }).find("more than 2^31 - 1 elements"), std::string::npos);
}

TEST(TrainKernelErrors, MissingBuffersAreErrors) {
  CpuKernels k;
  Conv2dOp op(k, small_conv());
  std::vector<float> x(3 * 5 * 7 * 17), w(2 * 2 * 17 * 4), y(3 * 4 * 6 * 4), dw(w.size());
  EXPECT_EQ(error_of([&] { op.forward(x.data(), w.data(), nullptr, y.data()); }),
            "conv2d [3, 5, 7, 17] -> 4 kernel 2x2 valid: forward needs the bias");
  EXPECT_EQ(error_of([&] { op.backward(x.data(), w.data(), y.data(), nullptr, dw.data(), nullptr); }),
            "conv2d [3, 5, 7, 17] -> 4 kernel 2x2 valid: backward needs a bias gradient buffer");
  // The norms' calls that take the caller's statistics need them (the layer's own are another call).
  float v[1] = {1}, out[1], d1[1], d2[1];
  BatchNormOp bn(k, BatchNormDesc{});
  EXPECT_EQ(error_of([&] { bn.forward_inference(v, v, v, nullptr, v, out); }),
            "batch_norm [1, 1, 1, 1] epsilon 0.001: forward_inference needs the moving mean and variance");
  LayerNormOp ln(k, LayerNormDesc{});
  EXPECT_EQ(error_of([&] { ln.forward(v, v, v, out, d1, nullptr); }),
            "layer_norm [1, 1] epsilon 0.001: forward needs the buffers for the mean and variance");
  EXPECT_EQ(error_of([&] { ln.backward(v, v, v, nullptr, v, out, d1, d2); }),
            "layer_norm [1, 1] epsilon 0.001: backward needs the mean and variance");
}

TEST(TrainKernelErrors, GeluCannotBeDifferentiatedFromItsOutput) {
  CpuKernels k;
  EltwiseOp op(k, {Activation::gelu(), 4});
  float y[4] = {}, dy[4] = {}, dx[4];
  EXPECT_EQ(error_of([&] { op.backward_from_output(y, dy, dx); }),
            "gelu x 4: its derivative needs the input, not the output: keep the pre-activation and use "
            "backward_from_input");
  EXPECT_FALSE(Activation::gelu().derivative_from_output());
  EXPECT_FALSE(Activation::leaky_relu(-0.5f).derivative_from_output());
  EXPECT_TRUE(Activation::leaky_relu(0.2f).derivative_from_output());
}

}  // namespace
}  // namespace pipec::train

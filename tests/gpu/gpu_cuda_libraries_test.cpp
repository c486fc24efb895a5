// The cuDNN convolutions and cuBLASLt dense layers of GPU training (runtime/train/gpu) on a real GPU,
// against the reference executor's kernels: every conv node kind (conv2d and conv2d_transpose, forward
// and both gradients) on geometries with TensorFlow's odd `same` padding, strides and dilation, and
// dense forward (with and without relu) and both gradients; each call run twice to check it repeats
// bit for bit. Needs a GPU with cuDNN 9 and cuBLASLt (tests/gpu/run.sh); fails saying why without them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "runtime/gpu/cublaslt_loader.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/cudnn_loader.h"
#include "runtime/gpu/gpu_inventory.h"
#include "runtime/train/gpu/cublaslt_dense.h"
#include "runtime/train/gpu/cudnn_conv.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec::gpu {
namespace {

// Device memory for one host vector, copied there and back on the test's stream.
class DeviceBuffer {
 public:
  DeviceBuffer(const CudaDriver& d, size_t bytes) : d_(d), bytes_(bytes) {
    d_.check(d_.cuMemAlloc(&ptr_, bytes_ ? bytes_ : 1), "cuMemAlloc");
  }
  ~DeviceBuffer() { d_.cuMemFree(ptr_); }
  DevPtr ptr() const { return ptr_; }
  void upload(const std::vector<float>& v, cuda::CUstream s) {
    d_.check(d_.cuMemcpyHtoDAsync(ptr_, v.data(), v.size() * 4, s), "cuMemcpyHtoDAsync");
  }
  std::vector<float> download(size_t n, cuda::CUstream s) {
    std::vector<float> v(n);
    d_.check(d_.cuMemcpyDtoHAsync(v.data(), ptr_, n * 4, s), "cuMemcpyDtoHAsync");
    d_.check(d_.cuStreamSynchronize(s), "cuStreamSynchronize");
    return v;
  }

 private:
  const CudaDriver& d_;
  size_t bytes_;
  cuda::CUdeviceptr ptr_ = 0;
};

struct Gpu {
  const CudaDriver* driver = nullptr;
  cuda::CUstream stream = nullptr;
  std::string why;
};

Gpu& gpu() {
  static Gpu g = [] {
    Gpu g;
    g.driver = cuda_driver(&g.why);
    if (g.driver) {
      g.driver->make_current();
      g.driver->check(g.driver->cuStreamCreate(&g.stream, cuda::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      GpuInventory inv = gpu_inventory();
      std::printf("[ gpu-libs ] driver %s CUDA %s, kernel module %s\n", inv.driver_path.c_str(),
                  inv.driver_cuda_version.c_str(), inv.kernel_module_version.c_str());
      for (const GpuDeviceInfo& d : inv.devices)
        std::printf("[ gpu-libs ] gpu %d: %s, %.1f GiB, sm_%d%d, %d SMs\n", d.index, d.name.c_str(),
                    d.memory_bytes / 1073741824.0, d.compute_major, d.compute_minor, d.multiprocessors);
      for (const GpuLibraryInfo& l : inv.libraries)
        std::printf("[ gpu-libs ] %-8s %s %s%s\n", l.name.c_str(),
                    l.found ? l.path.c_str() : "missing:", l.found ? l.version.c_str() : l.why.c_str(), "");
    }
    return g;
  }();
  return g;
}

std::vector<float> random_values(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& e : v) e = d(rng);
  return v;
}

// |got - want| within 1e-5 of the largest |want| times the terms summed, as f32 sums in another order
// may differ.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, int64_t terms,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float scale = 1;
  for (float v : want) scale = std::max(scale, std::abs(v));
  const double tol = 2e-6 * scale * std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1))) + 1e-6;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::abs(double(got[i]) - want[i]) > worst) worst = std::abs(double(got[i]) - want[i]), at = i;
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << got[at] << ", the reference " << want[at];
}

std::vector<float> last_axis_first(const std::vector<float>& v, const Shape& s) {
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k)
        for (int64_t l = 0; l < s[3]; ++l)
          out[((l * s[0] + i) * s[1] + j) * s[2] + k] = v[((i * s[1] + j) * s[2] + k) * s[3] + l];
  return out;
}
std::vector<float> first_axis_last(const std::vector<float>& v, const Shape& s) {
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k)
        for (int64_t l = 0; l < s[3]; ++l)
          out[((i * s[1] + j) * s[2] + k) * s[3] + l] = v[((l * s[0] + i) * s[1] + j) * s[2] + k];
  return out;
}

int64_t count(const Shape& s, int64_t rows) {
  int64_t n = rows;
  for (int64_t d : s) n *= d;
  return n;
}

struct ConvCase {
  const char* name;
  bool transpose;
  int64_t rows;
  Shape x, y;  // per example
  int64_t kh, kw, stride, dilation;
  bool same;
};

TEST(GpuLibraries, CudnnConvolutionsMatchTheReference) {
  Gpu& g = gpu();
  ASSERT_NE(g.driver, nullptr) << g.why;
  std::string why;
  const CudnnLibrary* lib = cudnn_library(&why);
  ASSERT_NE(lib, nullptr) << why;
  const ConvCase cases[] = {
      {"chess 3x3 same", false, 64, {8, 8, 12}, {8, 8, 64}, 3, 3, 1, 1, true},
      {"stride 2 even input (pad 0 above, 1 below)", false, 4, {16, 16, 8}, {8, 8, 16}, 3, 3, 2, 1, true},
      {"even window stride 1 (pad 1 / 2)", false, 3, {9, 9, 5}, {9, 9, 7}, 4, 4, 1, 1, true},
      {"dilation 2 same", false, 2, {11, 10, 3}, {11, 10, 6}, 3, 3, 1, 2, true},
      {"valid stride 2", false, 3, {13, 12, 4}, {6, 5, 8}, 3, 3, 2, 1, false},
      {"transpose stride 2 same", true, 4, {8, 8, 16}, {16, 16, 8}, 3, 3, 2, 1, true},
      {"transpose 4x4 stride 2 same", true, 2, {5, 6, 6}, {10, 12, 3}, 4, 4, 2, 1, true},
      {"transpose valid stride 2", true, 2, {5, 5, 4}, {11, 11, 2}, 3, 3, 2, 1, false},
  };
  std::mt19937_64 rng(7);
  CudnnConv conv(lib->api, g.stream, {});
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t cin = c.x[2], cout = c.y[2];
    const Shape kernel = c.transpose ? Shape{c.kh, c.kw, cout, cin} : Shape{c.kh, c.kw, cin, cout};
    ModelGraph graph;
    auto value_of = [&](const Shape& s, bool batched) {
      GraphValue v;
      v.shape = s;
      v.batched = batched;
      return graph.add_value(v);
    };
    const int vx = value_of(c.x, true), vy = value_of(c.y, true), vk = value_of(kernel, false);
    const int vdy = value_of(c.y, true), vdx = value_of(c.x, true), vdk = value_of(kernel, false);
    auto node = [&](ModelOp op, std::vector<int> in, std::vector<int> out) {
      GraphNode n;
      n.op = op, n.inputs = in, n.outputs = out, n.layer = c.name;
      const Padding padding = c.same ? Padding::Same : Padding::Valid;
      if (c.transpose) n.attrs = Conv2dTransposeAttrs{{c.kh, c.kw}, cout, {c.stride, c.stride}, padding, std::nullopt};
      else
        n.attrs =
            Conv2dAttrs{{c.kh, c.kw}, cout, {c.stride, c.stride}, padding, {c.dilation, c.dilation}, std::nullopt};
      return n;
    };
    GraphNode nodes[3] = {
        node(c.transpose ? ModelOp::Conv2dTranspose : ModelOp::Conv2d, {vx, vk}, {vy}),
        node(c.transpose ? ModelOp::Conv2dTransposeBackwardInput : ModelOp::Conv2dBackwardInput, {vdy, vk}, {vdx}),
        node(c.transpose ? ModelOp::Conv2dTransposeBackwardKernel : ModelOp::Conv2dBackwardKernel, {vx, vdy}, {vdk})};
    auto xs = random_values(rng, count(c.x, c.rows)), ks = random_values(rng, count(kernel, 1)),
         dys = random_values(rng, count(c.y, c.rows));
    // The reference, windows as runtime/train/reference/reference_executor.cpp builds them.
    ref::Window2d w;
    const Shape& in = c.transpose ? c.y : c.x;
    const Shape& out = c.transpose ? c.x : c.y;
    w.batch = c.rows;
    w.in_h = in[0], w.in_w = in[1], w.in_c = in[2], w.out_h = out[0], w.out_w = out[1], w.out_c = out[2];
    w.k_h = c.kh, w.k_w = c.kw, w.stride_h = w.stride_w = c.stride, w.dil_h = w.dil_w = c.dilation;
    w.pad_top = ref::pad_before(c.same, w.in_h, w.out_h, (c.kh - 1) * c.dilation + 1, c.stride);
    w.pad_left = ref::pad_before(c.same, w.in_w, w.out_w, (c.kw - 1) * c.dilation + 1, c.stride);
    std::vector<float> want[3] = {std::vector<float>(count(c.y, c.rows)), std::vector<float>(count(c.x, c.rows)),
                                  std::vector<float>(count(kernel, 1))};
    if (!c.transpose) {
      ref::conv2d<float>(w, xs.data(), ks.data(), nullptr, want[0].data());
      ref::conv2d_backward_input<float>(w, dys.data(), ks.data(), want[1].data());
      ref::conv2d_backward_kernel<float>(w, xs.data(), dys.data(), want[2].data());
    } else {
      ref::conv2d_backward_input<float>(w, xs.data(), ks.data(), want[0].data());
      ref::conv2d<float>(w, dys.data(), ks.data(), nullptr, want[1].data());
      ref::conv2d_backward_kernel<float>(w, dys.data(), xs.data(), want[2].data());
    }
    const std::vector<float> krsc = last_axis_first(ks, kernel);
    DeviceBuffer dx_in(*g.driver, xs.size() * 4), dk(*g.driver, krsc.size() * 4), ddy(*g.driver, dys.size() * 4);
    DeviceBuffer outs[3] = {DeviceBuffer(*g.driver, want[0].size() * 4), DeviceBuffer(*g.driver, want[1].size() * 4),
                            DeviceBuffer(*g.driver, want[2].size() * 4)};
    dx_in.upload(xs, g.stream);
    dk.upload(krsc, g.stream);
    ddy.upload(dys, g.stream);
    const DevPtr in0[3] = {dx_in.ptr(), ddy.ptr(), dx_in.ptr()};
    const DevPtr in1[3] = {dk.ptr(), dk.ptr(), ddy.ptr()};
    const char* kinds[3] = {"forward", "backward_input", "backward_kernel"};
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE(kinds[i]);
      ConvNodeCall call = conv_node_call(graph, nodes[i], c.rows);
      auto operand = [&](NodeOperand o) {
        return o == NodeOperand::Input0 ? in0[i] : o == NodeOperand::Input1 ? in1[i] : outs[i].ptr();
      };
      size_t ws_bytes = 0;
      try {
        ws_bytes = conv.workspace_bytes(call.kind, call.geometry, c.name);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        continue;
      }
      DeviceBuffer ws(*g.driver, ws_bytes);
      conv.run(call.kind, call.geometry, operand(call.x), operand(call.filter), operand(call.y), {ws.ptr(), ws_bytes},
               c.name);
      std::vector<float> got = outs[i].download(want[i].size(), g.stream);
      conv.run(call.kind, call.geometry, operand(call.x), operand(call.filter), operand(call.y), {ws.ptr(), ws_bytes},
               c.name);
      std::vector<float> again = outs[i].download(want[i].size(), g.stream);
      EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 4), 0) << "not bit-for-bit repeatable";
      if (i == 2) got = first_axis_last(got, kernel);
      const ConvGeometry& geo = call.geometry;
      const int64_t terms = i == 2 ? geo.n * geo.p * geo.q : geo.c * geo.r * geo.s;
      expect_close(got, want[i], terms, std::string(c.name) + " " + kinds[i]);
      std::printf("[ gpu-libs ] cuDNN %-45s %-16s engine %3lld, workspace %zu (%s)\n", c.name, kinds[i],
                  static_cast<long long>(conv.engine_of(call.kind, geo)), ws_bytes, geo.describe().c_str());
    }
  }
}

TEST(GpuLibraries, CublasLtDenseMatchesTheReference) {
  Gpu& g = gpu();
  ASSERT_NE(g.driver, nullptr) << g.why;
  std::string why;
  const CublasLtLibrary* lib = cublaslt_library(&why);
  ASSERT_NE(lib, nullptr) << why;
  CublasLtDense dense(lib->api, g.stream, {});
  std::mt19937_64 rng(11);
  const DenseShape shapes[] = {{512, 4096, 256}, {512, 256, 1}, {5, 7, 3}, {33, 130, 65}};
  for (const DenseShape& s : shapes) {
    SCOPED_TRACE(testing::Message() << "rows " << s.rows << " in " << s.in << " out " << s.out);
    auto x = random_values(rng, s.rows * s.in), k = random_values(rng, s.in * s.out), b = random_values(rng, s.out),
         dy = random_values(rng, s.rows * s.out);
    DeviceBuffer dx_(*g.driver, x.size() * 4), dk_(*g.driver, k.size() * 4), db_(*g.driver, b.size() * 4),
        ddy_(*g.driver, dy.size() * 4), dout(*g.driver, std::max({s.rows * s.out, s.rows * s.in, s.in * s.out}) * 4);
    dx_.upload(x, g.stream);
    dk_.upload(k, g.stream);
    db_.upload(b, g.stream);
    ddy_.upload(dy, g.stream);
    size_t ws_bytes = 0;
    for (DenseCall c :
         {DenseCall::Forward, DenseCall::ForwardRelu, DenseCall::BackwardInput, DenseCall::BackwardKernel})
      ws_bytes = std::max(ws_bytes, dense.workspace_bytes(c, s, "dense"));
    DeviceBuffer ws(*g.driver, ws_bytes);
    for (bool relu : {false, true}) {
      std::vector<float> want(s.rows * s.out);
      ref::dense<float>(s.rows, s.in, s.out, x.data(), k.data(), b.data(), want.data());
      if (relu)
        for (float& v : want) v = std::max(v, 0.0f);
      dense.forward(s, relu, dx_.ptr(), dk_.ptr(), db_.ptr(), dout.ptr(), {ws.ptr(), ws_bytes}, "dense");
      auto got = dout.download(want.size(), g.stream);
      dense.forward(s, relu, dx_.ptr(), dk_.ptr(), db_.ptr(), dout.ptr(), {ws.ptr(), ws_bytes}, "dense");
      auto again = dout.download(want.size(), g.stream);
      EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 4), 0) << "forward not repeatable";
      expect_close(got, want, s.in, relu ? "forward+relu" : "forward");
    }
    {
      std::vector<float> want(s.rows * s.in);
      ref::dense_backward_input<float>(s.rows, s.in, s.out, dy.data(), k.data(), want.data());
      dense.backward_input(s, ddy_.ptr(), dk_.ptr(), dout.ptr(), {ws.ptr(), ws_bytes}, "dense");
      expect_close(dout.download(want.size(), g.stream), want, s.out, "backward_input");
    }
    {
      std::vector<float> want(s.in * s.out);
      ref::dense_backward_kernel<float>(s.rows, s.in, s.out, x.data(), dy.data(), want.data());
      dense.backward_kernel(s, dx_.ptr(), ddy_.ptr(), dout.ptr(), {ws.ptr(), ws_bytes}, "dense");
      auto got = dout.download(want.size(), g.stream);
      dense.backward_kernel(s, dx_.ptr(), ddy_.ptr(), dout.ptr(), {ws.ptr(), ws_bytes}, "dense");
      auto again = dout.download(want.size(), g.stream);
      EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 4), 0) << "backward_kernel not repeatable";
      expect_close(got, want, s.rows, "backward_kernel");
    }
    std::printf("[ gpu-libs ] cuBLASLt dense rows %lld in %lld out %lld: workspace %zu\n",
                static_cast<long long>(s.rows), static_cast<long long>(s.in), static_cast<long long>(s.out), ws_bytes);
  }
}

}  // namespace
}  // namespace pipec::gpu

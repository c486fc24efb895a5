// 2-D convolutions of GPU training on cuDNN 9's backend graph API: forward, backward-data and
// backward-filter of one convolution, each a one-operation graph whose execution plan is chosen once per
// shape and cached.
//
// Layouts: x and y are NHWC ([n, h, w, c], pipec's activations as they are); the filter is cuDNN's KRSC
// [out channels, kh, kw, in channels]. pipec keeps Keras' layouts in its flat buffers (conv2d HWIO
// [kh, kw, in, out], conv2d_transpose HWOI [kh, kw, out, in]): both become KRSC by moving the last axis
// first, which the executor does (and moves it back for a kernel gradient).
//
// Engines: heuristics mode A, then the fallback list; an engine is never used when it carries the
// NONDETERMINISTIC numerical note (a step repeats bit for bit) or reduced-precision reduction, and for
// f32 data none with the DOWN_CONVERT_INPUTS note (to fp16) and none with the TENSOR_CORE note (TF32)
// unless allow_tf32 or tf32_exact_operands (LibraryCallOptions). Products are summed in f32 whatever the
// storage type.
//
// Padding: TensorFlow's `same` pads (out - 1) * stride + window - in in total, the odd one at the end
// (bottom, right); the convolution descriptor carries it as pre- and post-paddings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/gpu/cudnn_api.h"
#include "runtime/model/model_graph.h"
#include "runtime/train/gpu/library_types.h"

namespace pipec::gpu {

/// One 2-D convolution (cross-correlation): x [n, h, w, c] and filter [k, r, s, c] -> y [n, p, q, k].
struct ConvGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // x
  int64_t k = 0, r = 0, s = 0;         // filter: k outputs, r x s window
  int64_t p = 0, q = 0;                // y's height and width
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;

  /// "x [512, 8, 8, 12], filter KRSC [64, 3, 3, 12], y [512, 8, 8, 64], stride 1x1, dilation 1x1, pad
  /// top 1 bottom 1 left 1 right 1"
  std::string describe() const;
  /// Throws GpuError naming what is wrong when a size is not positive or y's size is not the one the
  /// padding, stride and dilation give.
  void validate() const;
  auto key() const {
    return std::tuple(n, h, w, c, k, r, s, p, q, stride_h, stride_w, dilation_h, dilation_w,
                      std::tuple(pad_top, pad_bottom, pad_left, pad_right));
  }
};

/// TensorFlow's geometry: pads from `same` / `valid` for x [rows, h, w, c] -> y [rows, p, q, k] with an
/// r x s window.
ConvGeometry tensorflow_conv_geometry(int64_t rows, const Shape& x, const Shape& y, int64_t r, int64_t s,
                                      int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                                      bool same);

enum class ConvKind { Forward, BackwardData, BackwardFilter };
const char* conv_kind_name(ConvKind k);  // "forward", "backward_data", "backward_filter"

/// How the executor runs a conv node of the step graph on cuDNN: one call of `kind` on `geometry`,
/// whose three tensors are these operands of the node (`filter` in KRSC: the executor's transposed
/// copy of the kernel, or where the kernel gradient lands before it is transposed back).
///   conv2d                           forward          x = in0, filter = in1, y = out0
///   conv2d_backward_input            backward_data    dx = out0, filter = in1, dy = in0
///   conv2d_backward_kernel           backward_filter  x = in0, dfilter = out0, dy = in1
/// conv2d_transpose is the backward-data pass of the convolution C from its output space back to its
/// input space (runtime/train/reference/reference_executor.cpp): C's x is the transpose's y, C's y its x, and
/// its HWOI kernel in KRSC is C's filter.
///   conv2d_transpose                 backward_data    dx = out0, filter = in1, dy = in0
///   conv2d_transpose_backward_input  forward          x = in0, filter = in1, y = out0
///   conv2d_transpose_backward_kernel backward_filter  x = in1, dfilter = out0, dy = in0
/// Bias and activation of conv2d / conv2d_transpose are not part of the call: the executor adds them.
enum class NodeOperand { Input0, Input1, Output0 };
struct ConvNodeCall {
  ConvKind kind = ConvKind::Forward;
  ConvGeometry geometry;
  NodeOperand x = NodeOperand::Input0;       // x (dx for backward_data)
  NodeOperand filter = NodeOperand::Input1;  // filter (dfilter for backward_filter), KRSC
  NodeOperand y = NodeOperand::Output0;      // y (dy for backward_data and backward_filter)
};

/// The call for a conv node (the six kinds above) at `rows` examples; throws std::logic_error for
/// any other node.
ConvNodeCall conv_node_call(const ModelGraph& g, const GraphNode& n, int64_t rows);

class CudnnConv {
 public:
  /// Creates a cuDNN handle on `stream` (cudnnCreate, cudnnSetStream) with the functions of `api`: the
  /// loaded library's, or a test's recording fake.
  CudnnConv(const cudnn::CudnnApi& api, cuda::CUstream stream, LibraryCallOptions options);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  /// The workspace the call needs; builds (and caches) its execution plan. `layer` names the layer in
  /// errors.
  size_t workspace_bytes(ConvKind kind, const ConvGeometry& g, const std::string& layer);

  /// The call, queued on the stream. `x`, `filter`, `y` are x / dx, filter / dfilter, y / dy as `kind`
  /// reads or writes them; the written one is overwritten.
  void run(ConvKind kind, const ConvGeometry& g, DevPtr x, DevPtr filter, DevPtr y, DeviceWorkspace workspace,
           const std::string& layer);
  void forward(const ConvGeometry& g, DevPtr x, DevPtr filter, DevPtr y, DeviceWorkspace ws, const std::string& layer) {
    run(ConvKind::Forward, g, x, filter, y, ws, layer);
  }
  void backward_data(const ConvGeometry& g, DevPtr dy, DevPtr filter, DevPtr dx, DeviceWorkspace ws,
                     const std::string& layer) {
    run(ConvKind::BackwardData, g, dx, filter, dy, ws, layer);
  }
  void backward_filter(const ConvGeometry& g, DevPtr x, DevPtr dy, DevPtr dfilter, DeviceWorkspace ws,
                       const std::string& layer) {
    run(ConvKind::BackwardFilter, g, x, dfilter, dy, ws, layer);
  }

  /// The engine a cached plan runs (cuDNN's global engine index), for reports; -1 when not built.
  int64_t engine_of(ConvKind kind, const ConvGeometry& g) const;
  size_t cached_plans() const { return plans_.size(); }

  class Descriptor;  // a backend descriptor, destroyed with its owner
  struct Plan;

 private:
  using Key = std::tuple<int, decltype(std::declval<ConvGeometry>().key())>;
  Plan& plan(ConvKind kind, const ConvGeometry& g, const std::string& layer);

  const cudnn::CudnnApi& api_;
  LibraryCallOptions options_;
  cudnn::cudnnHandle_t handle_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace pipec::gpu

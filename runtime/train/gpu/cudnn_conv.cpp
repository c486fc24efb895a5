#include "runtime/train/gpu/cudnn_conv.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/gpu/gpu_error.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec::gpu {

using namespace cudnn;

// ---------------------------------------------------------------------------------------------------
// Geometry

std::string ConvGeometry::describe() const {
  return fmt::format(
      "x [{}, {}, {}, {}], filter KRSC [{}, {}, {}, {}], y [{}, {}, {}, {}], stride {}x{}, dilation {}x{}, pad top {} "
      "bottom {} left {} right {}",
      n, h, w, c, k, r, s, c, n, p, q, k, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_bottom, pad_left,
      pad_right);
}

namespace {

// cuDNN's (and TensorFlow's) output size: 1 + (in + pads - dilated window) / stride, rounded down.
int64_t conv_out(int64_t in, int64_t pads, int64_t window, int64_t dilation, int64_t stride) {
  int64_t span = in + pads - ((window - 1) * dilation + 1);
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace

void ConvGeometry::validate() const {
  for (auto [v, name] :
       {std::pair{n, "batch"}, std::pair{h, "height"}, std::pair{w, "width"}, std::pair{c, "input channels"},
        std::pair{k, "output channels"}, std::pair{r, "window height"}, std::pair{s, "window width"},
        std::pair{p, "output height"}, std::pair{q, "output width"}, std::pair{stride_h, "stride"},
        std::pair{stride_w, "stride"}, std::pair{dilation_h, "dilation"}, std::pair{dilation_w, "dilation"}})
    if (v <= 0) throw GpuError(fmt::format("cuDNN: convolution with {} {} ({})", name, v, describe()));
  for (int64_t pad : {pad_top, pad_bottom, pad_left, pad_right})
    if (pad < 0) throw GpuError(fmt::format("cuDNN: convolution with a negative padding ({})", describe()));
  if (conv_out(h, pad_top + pad_bottom, r, dilation_h, stride_h) != p ||
      conv_out(w, pad_left + pad_right, s, dilation_w, stride_w) != q)
    throw GpuError(
        fmt::format("cuDNN: convolution whose output is not {}x{} as its padding, stride and dilation give "
                    "({})",
                    conv_out(h, pad_top + pad_bottom, r, dilation_h, stride_h),
                    conv_out(w, pad_left + pad_right, s, dilation_w, stride_w), describe()));
}

ConvGeometry tensorflow_conv_geometry(int64_t rows, const Shape& x, const Shape& y, int64_t r, int64_t s,
                                      int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
                                      bool same) {
  if (x.size() != 3 || y.size() != 3)
    throw std::logic_error(
        fmt::format("convolution of [{}] -> [{}]: x and y must be [h, w, c]", fmt::join(x, ", "), fmt::join(y, ", ")));
  ConvGeometry g;
  g.n = rows;
  g.h = x[0], g.w = x[1], g.c = x[2];
  g.p = y[0], g.q = y[1], g.k = y[2];
  g.r = r, g.s = s;
  g.stride_h = stride_h, g.stride_w = stride_w;
  g.dilation_h = dilation_h, g.dilation_w = dilation_w;
  auto pads = [&](int64_t in, int64_t out, int64_t window, int64_t dilation, int64_t stride) {
    const int64_t span = (window - 1) * dilation + 1;
    const int64_t before = ref::pad_before(same, in, out, span, stride);
    const int64_t total = same ? std::max<int64_t>((out - 1) * stride + span - in, 0) : 0;
    return std::pair{before, total - before};
  };
  std::tie(g.pad_top, g.pad_bottom) = pads(g.h, g.p, r, dilation_h, stride_h);
  std::tie(g.pad_left, g.pad_right) = pads(g.w, g.q, s, dilation_w, stride_w);
  return g;
}

const char* conv_kind_name(ConvKind k) {
  switch (k) {
    case ConvKind::Forward: return "forward";
    case ConvKind::BackwardData: return "backward_data";
    case ConvKind::BackwardFilter: return "backward_filter";
  }
  return "?";
}

ConvNodeCall conv_node_call(const ModelGraph& g, const GraphNode& n, int64_t rows) {
  auto shape = [&](int v) -> const Shape& { return g.values.at(v).shape; };
  ConvNodeCall call;
  // The convolution's x and y values, and its kernel value ([kh, kw, x channels, y channels] for both
  // conv2d's HWIO and conv2d_transpose's HWOI, whose convolution runs from the transpose's y to its x).
  int x = -1, y = -1, kernel = -1;
  bool transpose = false;
  switch (n.op) {
    case ModelOp::Conv2d:
      call = {ConvKind::Forward, {}, NodeOperand::Input0, NodeOperand::Input1, NodeOperand::Output0};
      x = n.inputs[0], y = n.outputs[0], kernel = n.inputs[1];
      break;
    case ModelOp::Conv2dBackwardInput:
      call = {ConvKind::BackwardData, {}, NodeOperand::Output0, NodeOperand::Input1, NodeOperand::Input0};
      x = n.outputs[0], y = n.inputs[0], kernel = n.inputs[1];
      break;
    case ModelOp::Conv2dBackwardKernel:
      call = {ConvKind::BackwardFilter, {}, NodeOperand::Input0, NodeOperand::Output0, NodeOperand::Input1};
      x = n.inputs[0], y = n.inputs[1], kernel = n.outputs[0];
      break;
    case ModelOp::Conv2dTranspose:
      call = {ConvKind::BackwardData, {}, NodeOperand::Output0, NodeOperand::Input1, NodeOperand::Input0};
      x = n.outputs[0], y = n.inputs[0], kernel = n.inputs[1], transpose = true;
      break;
    case ModelOp::Conv2dTransposeBackwardInput:
      call = {ConvKind::Forward, {}, NodeOperand::Input0, NodeOperand::Input1, NodeOperand::Output0};
      x = n.inputs[0], y = n.outputs[0], kernel = n.inputs[1], transpose = true;
      break;
    case ModelOp::Conv2dTransposeBackwardKernel:
      call = {ConvKind::BackwardFilter, {}, NodeOperand::Input1, NodeOperand::Output0, NodeOperand::Input0};
      x = n.inputs[1], y = n.inputs[0], kernel = n.outputs[0], transpose = true;
      break;
    default:
      throw std::logic_error(
          fmt::format("conv_node_call: `{}` of layer `{}` is not a convolution node", model_op_name(n.op), n.layer));
  }
  const Shape& ks = shape(kernel);
  // conv2d_transpose has no dilation (Keras' Conv2DTranspose with dilation is not a layer pipec has).
  Pair strides, dilation = {1, 1};
  Padding padding;
  if (transpose) {
    const Conv2dTransposeAttrs& a = n.attrs_as<Conv2dTransposeAttrs>();
    strides = a.strides, padding = a.padding;
  } else {
    const Conv2dAttrs& a = n.attrs_as<Conv2dAttrs>();
    strides = a.strides, dilation = a.dilation, padding = a.padding;
  }
  call.geometry = tensorflow_conv_geometry(rows, shape(x), shape(y), ks.at(0), ks.at(1), strides[0], strides[1],
                                           dilation[0], dilation[1], padding == Padding::Same);
  if (ks.size() != 4 || ks[2] != call.geometry.c || ks[3] != call.geometry.k)
    throw std::logic_error(fmt::format("conv_node_call: layer `{}`'s kernel [{}] does not join x [{}] and y [{}]",
                                       n.layer, fmt::join(ks, ", "), fmt::join(shape(x), ", "),
                                       fmt::join(shape(y), ", ")));
  return call;
}

// ---------------------------------------------------------------------------------------------------
// Backend descriptors

namespace {

// What every error names: the call, the layer, its shapes.
struct CallContext {
  const CudnnApi& api;
  ConvKind kind;
  const ConvGeometry& g;
  const std::string& layer;
  GpuDType dtype;

  std::string where() const {
    return fmt::format("conv {} of layer `{}` ({}, {})", conv_kind_name(kind), layer, g.describe(),
                       gpu_dtype_name(dtype));
  }

  [[noreturn]] void fail(cudnnStatus_t status, const std::string& what) const {
    const char* name = api.cudnnGetErrorString ? api.cudnnGetErrorString(status) : nullptr;
    char last[1024] = {};
    if (api.cudnnGetLastErrorString) api.cudnnGetLastErrorString(last, sizeof last);
    std::string detail = last[0] ? fmt::format(" [{}]", last) : "";
    throw GpuError(fmt::format("cuDNN: {} failed with {}{} in {}", what, name ? name : fmt::format("status {}", status),
                               detail, where()));
  }
  void check(cudnnStatus_t status, const std::string& what) const {
    if (status != CUDNN_STATUS_SUCCESS) fail(status, what);
  }
};

}  // namespace

class CudnnConv::Descriptor {
 public:
  Descriptor() = default;
  Descriptor(const CallContext& ctx, cudnnBackendDescriptorType_t type, const char* type_name)
      : api_(&ctx.api), name_(type_name) {
    ctx.check(api_->cudnnBackendCreateDescriptor(type, &d_), fmt::format("cudnnBackendCreateDescriptor({})", name_));
  }
  ~Descriptor() {
    if (d_) api_->cudnnBackendDestroyDescriptor(d_);
  }
  Descriptor(Descriptor&& o) noexcept : api_(o.api_), d_(o.d_), name_(o.name_) { o.d_ = nullptr; }
  Descriptor& operator=(Descriptor&& o) noexcept {
    std::swap(api_, o.api_);
    std::swap(d_, o.d_);
    std::swap(name_, o.name_);
    return *this;
  }

  cudnnBackendDescriptor_t get() const { return d_; }
  const char* name() const { return name_; }

  cudnnStatus_t try_set(cudnnBackendAttributeName_t attr, cudnnBackendAttributeType_t type, int64_t count,
                        const void* values) const {
    return api_->cudnnBackendSetAttribute(d_, attr, type, count, values);
  }
  void set(const CallContext& ctx, cudnnBackendAttributeName_t attr, const char* attr_name,
           cudnnBackendAttributeType_t type, int64_t count, const void* values) const {
    ctx.check(try_set(attr, type, count, values), fmt::format("cudnnBackendSetAttribute({}, {})", name_, attr_name));
  }
  void set_descriptor(const CallContext& ctx, cudnnBackendAttributeName_t attr, const char* attr_name,
                      const Descriptor& value) const {
    cudnnBackendDescriptor_t v = value.get();
    set(ctx, attr, attr_name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  }
  void finalize(const CallContext& ctx) const {
    ctx.check(api_->cudnnBackendFinalize(d_), fmt::format("cudnnBackendFinalize({})", name_));
  }

 private:
  const CudnnApi* api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
  const char* name_ = "";
};

// The attribute and its name, for the errors.
#define PIPEC_ATTR(name) cudnn::name, #name

struct CudnnConv::Plan {
  std::vector<Descriptor> keep;  // tensors, convolution, operation, graph, engine config: as long as the plan
  Descriptor plan;
  int64_t workspace = 0;
  int64_t engine = -1;
};

namespace {

constexpr int64_t kUidX = 1, kUidFilter = 2, kUidY = 3;

cudnnDataType_t cudnn_type(GpuDType t) {
  switch (t) {
    case GpuDType::F32: return CUDNN_DATA_FLOAT;
    case GpuDType::F16: return CUDNN_DATA_HALF;
    case GpuDType::BF16: return CUDNN_DATA_BFLOAT16;
  }
  return CUDNN_DATA_FLOAT;
}

// A 4-D tensor given as cuDNN orders dimensions ([n, c, h, w] for activations, [k, c, r, s] for the
// filter) stored channels-last: NHWC and KRSC.
CudnnConv::Descriptor channels_last_tensor(const CallContext& ctx, int64_t uid, int64_t n, int64_t c, int64_t h,
                                           int64_t w, GpuDType dtype, int64_t alignment) {
  CudnnConv::Descriptor t(ctx, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "TENSOR");
  const cudnnDataType_t type = cudnn_type(dtype);
  const int64_t dims[4] = {n, c, h, w};
  const int64_t strides[4] = {h * w * c, 1, w * c, c};
  t.set(ctx, PIPEC_ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE), CUDNN_TYPE_DATA_TYPE, 1, &type);
  t.set(ctx, PIPEC_ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS), CUDNN_TYPE_INT64, 4, dims);
  t.set(ctx, PIPEC_ATTR(CUDNN_ATTR_TENSOR_STRIDES), CUDNN_TYPE_INT64, 4, strides);
  t.set(ctx, PIPEC_ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID), CUDNN_TYPE_INT64, 1, &uid);
  t.set(ctx, PIPEC_ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), CUDNN_TYPE_INT64, 1, &alignment);
  t.finalize(ctx);
  return t;
}

// Why engines were passed over, for the error when none is left.
struct EngineTally {
  int64_t offered = 0, nondeterministic = 0, tf32 = 0, down_convert = 0, reduced_precision = 0, unreadable = 0,
          not_built = 0;
  std::string last_failure;
};

}  // namespace

CudnnConv::CudnnConv(const CudnnApi& api, cuda::CUstream stream, LibraryCallOptions options)
    : api_(api), options_(options) {
  auto fail = [&](cudnnStatus_t s, const char* what) {
    const char* name = api_.cudnnGetErrorString(s);
    throw GpuError(fmt::format("cuDNN: {} failed with {}", what, name ? name : fmt::format("status {}", s)));
  };
  if (cudnnStatus_t s = api_.cudnnCreate(&handle_); s != CUDNN_STATUS_SUCCESS) fail(s, "cudnnCreate");
  if (cudnnStatus_t s = api_.cudnnSetStream(handle_, stream); s != CUDNN_STATUS_SUCCESS) {
    api_.cudnnDestroy(handle_);
    handle_ = nullptr;
    fail(s, "cudnnSetStream");
  }
}

CudnnConv::~CudnnConv() {
  plans_.clear();  // every descriptor before the handle
  if (handle_) api_.cudnnDestroy(handle_);
}

CudnnConv::Plan& CudnnConv::plan(ConvKind kind, const ConvGeometry& g, const std::string& layer) {
  Key key{static_cast<int>(kind), g.key()};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  g.validate();
  const CallContext ctx{api_, kind, g, layer, options_.dtype};
  auto p = std::make_unique<Plan>();
  const int64_t alignment = options_.alignment;

  // The three tensors, the convolution, the operation, the graph.
  p->keep.push_back(channels_last_tensor(ctx, kUidX, g.n, g.c, g.h, g.w, options_.dtype, alignment));
  p->keep.push_back(channels_last_tensor(ctx, kUidFilter, g.k, g.c, g.r, g.s, options_.dtype, alignment));
  p->keep.push_back(channels_last_tensor(ctx, kUidY, g.n, g.k, g.p, g.q, options_.dtype, alignment));
  const Descriptor& x = p->keep[0];
  const Descriptor& filter = p->keep[1];
  const Descriptor& y = p->keep[2];

  Descriptor conv(ctx, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "CONVOLUTION");
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const int64_t pre[2] = {g.pad_top, g.pad_left}, post[2] = {g.pad_bottom, g.pad_right};
  const int64_t dilations[2] = {g.dilation_h, g.dilation_w}, strides[2] = {g.stride_h, g.stride_w};
  conv.set(ctx, PIPEC_ATTR(CUDNN_ATTR_CONVOLUTION_COMP_TYPE), CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv.set(ctx, PIPEC_ATTR(CUDNN_ATTR_CONVOLUTION_CONV_MODE), CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv.set(ctx, PIPEC_ATTR(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS), CUDNN_TYPE_INT64, 1, &spatial);
  conv.set(ctx, PIPEC_ATTR(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS), CUDNN_TYPE_INT64, 2, pre);
  conv.set(ctx, PIPEC_ATTR(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS), CUDNN_TYPE_INT64, 2, post);
  conv.set(ctx, PIPEC_ATTR(CUDNN_ATTR_CONVOLUTION_DILATIONS), CUDNN_TYPE_INT64, 2, dilations);
  conv.set(ctx, PIPEC_ATTR(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES), CUDNN_TYPE_INT64, 2, strides);
  conv.finalize(ctx);

  // alpha and beta are floats for every compute type but double.
  const float alpha = 1.0f, beta = 0.0f;
  Descriptor op;
  switch (kind) {
    case ConvKind::Forward:
      op = Descriptor(ctx, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "OPERATION_CONVOLUTION_FORWARD");
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X), x);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W), filter);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y), y);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC), conv);
      op.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA), CUDNN_TYPE_FLOAT, 1, &alpha);
      op.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA), CUDNN_TYPE_FLOAT, 1, &beta);
      break;
    case ConvKind::BackwardData:
      op = Descriptor(ctx, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                      "OPERATION_CONVOLUTION_BACKWARD_DATA");
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX), x);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W), filter);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY), y);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC), conv);
      op.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA), CUDNN_TYPE_FLOAT, 1, &alpha);
      op.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA), CUDNN_TYPE_FLOAT, 1, &beta);
      break;
    case ConvKind::BackwardFilter:
      op = Descriptor(ctx, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                      "OPERATION_CONVOLUTION_BACKWARD_FILTER");
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X), x);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW), filter);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY), y);
      op.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC), conv);
      op.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA), CUDNN_TYPE_FLOAT, 1, &alpha);
      op.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA), CUDNN_TYPE_FLOAT, 1, &beta);
      break;
  }
  op.finalize(ctx);

  Descriptor graph(ctx, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "OPERATIONGRAPH");
  cudnnBackendDescriptor_t ops[1] = {op.get()};
  graph.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS), CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, ops);
  // Required before cuDNN 9.8, accepted (deprecated) after.
  graph.set(ctx, PIPEC_ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE), CUDNN_TYPE_HANDLE, 1, &handle_);
  graph.finalize(ctx);
  p->keep.push_back(std::move(conv));
  p->keep.push_back(std::move(op));
  p->keep.push_back(std::move(graph));
  const Descriptor& op_graph = p->keep.back();

  // Engines: mode A's list, then the fallback list, each in the heuristic's order; the first that is
  // deterministic, f32-exact when asked, and builds a plan wins. TF32 tensor cores (the TENSOR_CORE note on
  // f32 data) are f32-exact for operands that are 16-bit values; an engine that down-converts f32 inputs
  // (to fp16, whose range is narrower than f32's and bf16's) never is.
  EngineTally tally;
  const bool f32 = options_.dtype == GpuDType::F32;
  const bool tf32_ok = options_.allow_tf32 || options_.tf32_exact_operands;
  for (cudnnBackendHeurMode_t heur_mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    const char* mode_name = heur_mode == CUDNN_HEUR_MODE_A ? "A" : "FALLBACK";
    Descriptor heur(ctx, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "ENGINEHEUR");
    heur.set_descriptor(ctx, PIPEC_ATTR(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH), op_graph);
    heur.set(ctx, PIPEC_ATTR(CUDNN_ATTR_ENGINEHEUR_MODE), CUDNN_TYPE_HEUR_MODE, 1, &heur_mode);
    if (cudnnStatus_t s = api_.cudnnBackendFinalize(heur.get()); s != CUDNN_STATUS_SUCCESS) {
      // A mode may not cover the graph (NOT_SUPPORTED); the next one may.
      const char* name = api_.cudnnGetErrorString(s);
      tally.last_failure = fmt::format("heuristics mode {}: {}", mode_name, name ? name : std::to_string(s));
      continue;
    }
    int64_t count = 0;
    ctx.check(api_.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                            &count, nullptr),
              "cudnnBackendGetAttribute(ENGINEHEUR, CUDNN_ATTR_ENGINEHEUR_RESULTS) count");
    if (count <= 0) continue;
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.emplace_back(ctx, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "ENGINECFG");
      raw.push_back(configs.back().get());
    }
    int64_t returned = 0;
    ctx.check(api_.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                            count, &returned, raw.data()),
              "cudnnBackendGetAttribute(ENGINEHEUR, CUDNN_ATTR_ENGINEHEUR_RESULTS)");
    for (int64_t i = 0; i < returned && i < count; ++i) {
      ++tally.offered;
      // The engine behind the configuration, and its numerical notes.
      Descriptor engine(ctx, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "ENGINE");
      cudnnBackendDescriptor_t engine_raw = engine.get();
      int64_t n = 0;
      int64_t engine_index = -1;
      cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT] = {};
      int64_t note_count = 0;
      if (api_.cudnnBackendGetAttribute(configs[i].get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                        &n, &engine_raw) != CUDNN_STATUS_SUCCESS ||
          api_.cudnnBackendGetAttribute(engine_raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                        CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &note_count, notes) != CUDNN_STATUS_SUCCESS) {
        ++tally.unreadable;  // a determinism that cannot be checked is not assumed
        continue;
      }
      api_.cudnnBackendGetAttribute(engine_raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &engine_index);
      note_count = std::clamp<int64_t>(note_count, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
      auto has = [&](cudnnBackendNumericalNote_t note) {
        return std::find(notes, notes + note_count, note) != notes + note_count;
      };
      if (has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) {
        ++tally.nondeterministic;
        continue;
      }
      if (has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) {
        ++tally.reduced_precision;
        continue;
      }
      if (f32 && has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) {
        ++tally.down_convert;
        continue;
      }
      if (f32 && !tf32_ok && has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) {
        ++tally.tf32;
        continue;
      }
      Descriptor plan(ctx, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "EXECUTION_PLAN");
      cudnnBackendDescriptor_t config_raw = configs[i].get();
      plan.set(ctx, PIPEC_ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE), CUDNN_TYPE_HANDLE, 1, &handle_);
      plan.set(ctx, PIPEC_ATTR(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG), CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config_raw);
      if (cudnnStatus_t s = api_.cudnnBackendFinalize(plan.get()); s != CUDNN_STATUS_SUCCESS) {
        // This engine cannot run this shape after all (finalizing is where cuDNN checks): the next.
        ++tally.not_built;
        const char* name = api_.cudnnGetErrorString(s);
        tally.last_failure = fmt::format("engine {}: {}", engine_index, name ? name : std::to_string(s));
        continue;
      }
      int64_t workspace = 0;
      ctx.check(api_.cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                              &n, &workspace),
                "cudnnBackendGetAttribute(EXECUTION_PLAN, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)");
      if (workspace < 0) ctx.fail(CUDNN_STATUS_BAD_PARAM, "a negative workspace size from the execution plan");
      p->keep.push_back(std::move(configs[i]));
      p->plan = std::move(plan);
      p->workspace = workspace;
      p->engine = engine_index;
      return *plans_.emplace(key, std::move(p)).first->second;
    }
  }
  throw GpuError(fmt::format(
      "cuDNN: no usable engine for {}: heuristics offered {}; {} nondeterministic, {} TF32 (f32 without "
      "--allow-tf32), {} down-converting f32 inputs, {} with reduced-precision sums, {} with unreadable notes, {} "
      "failed to build{}",
      ctx.where(), tally.offered, tally.nondeterministic, tally.tf32, tally.down_convert, tally.reduced_precision,
      tally.unreadable, tally.not_built, tally.last_failure.empty() ? "" : " (last: " + tally.last_failure + ")"));
}

size_t CudnnConv::workspace_bytes(ConvKind kind, const ConvGeometry& g, const std::string& layer) {
  return static_cast<size_t>(plan(kind, g, layer).workspace);
}

int64_t CudnnConv::engine_of(ConvKind kind, const ConvGeometry& g) const {
  auto it = plans_.find(Key{static_cast<int>(kind), g.key()});
  return it == plans_.end() ? -1 : it->second->engine;
}

void CudnnConv::run(ConvKind kind, const ConvGeometry& g, DevPtr x, DevPtr filter, DevPtr y, DeviceWorkspace workspace,
                    const std::string& layer) {
  Plan& p = plan(kind, g, layer);
  const CallContext ctx{api_, kind, g, layer, options_.dtype};
  for (auto [ptr, what] : {std::pair{x, "x"}, std::pair{filter, "filter"}, std::pair{y, "y"}})
    if (ptr == 0 || ptr % options_.alignment != 0)
      throw GpuError(fmt::format("cuDNN: {}: tensor {} at {:#x} is not a non-null multiple of {} bytes", ctx.where(),
                                 what, ptr, options_.alignment));
  if (workspace.bytes < static_cast<size_t>(p.workspace) || (p.workspace > 0 && workspace.ptr == 0))
    throw GpuError(
        fmt::format("cuDNN: {} needs {} bytes of workspace, was given {}", ctx.where(), p.workspace, workspace.bytes));
  auto ptr = [](DevPtr v) { return reinterpret_cast<void*>(static_cast<uintptr_t>(v)); };
  void* pointers[3] = {ptr(x), ptr(filter), ptr(y)};
  const int64_t uids[3] = {kUidX, kUidFilter, kUidY};
  void* ws = p.workspace > 0 ? ptr(workspace.ptr) : nullptr;
  Descriptor pack(ctx, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "VARIANT_PACK");
  pack.set(ctx, PIPEC_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), CUDNN_TYPE_VOID_PTR, 3, pointers);
  pack.set(ctx, PIPEC_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), CUDNN_TYPE_INT64, 3, uids);
  pack.set(ctx, PIPEC_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), CUDNN_TYPE_VOID_PTR, 1, &ws);
  pack.finalize(ctx);
  ctx.check(api_.cudnnBackendExecute(handle_, p.plan.get(), pack.get()), "cudnnBackendExecute");
}

}  // namespace pipec::gpu

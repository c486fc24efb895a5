#include "runtime/train/gpu/node_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "runtime/ops/batch_statistics.h"
#include "runtime/train/gpu/gpu_kernel_claim.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec::gpu {

namespace {

// ---- typed launches ----

// One kernel argument, stored as the kernel's parameter type (cuLaunchKernel reads each through a
// pointer to it), with its type's code to check against step_kernels.def.
struct Arg {
  alignas(8) unsigned char bytes[8] = {};
  char code = 0;
};
template <class T>
Arg make_arg(T v, char code) {
  static_assert(sizeof(T) <= 8);
  Arg a;
  std::memcpy(a.bytes, &v, sizeof(T));
  a.code = code;
  return a;
}
Arg I64(int64_t v) { return make_arg<long long>(v, 'l'); }
Arg U64(uint64_t v) { return make_arg<unsigned long long>(v, 'u'); }
Arg I32(int v) { return make_arg<int>(v, 'i'); }
Arg F32(float v) { return make_arg<float>(v, 'f'); }
Arg F64(double v) { return make_arg<double>(v, 'd'); }
Arg P(DevPtr p) { return make_arg<DevPtr>(p, 'p'); }

// The code of each parameter type step_kernels.def uses.
template <class T>
constexpr char type_code() {
  if constexpr (std::is_pointer_v<T>) return 'p';
  else if constexpr (std::is_same_v<T, long long>) return 'l';
  else if constexpr (std::is_same_v<T, unsigned long long>) return 'u';
  else if constexpr (std::is_same_v<T, int>) return 'i';
  else if constexpr (std::is_same_v<T, float>) return 'f';
  else if constexpr (std::is_same_v<T, double>) return 'd';
  else static_assert(sizeof(T) == 0, "step_kernels.def: a parameter type the launches cannot pass");
}
template <class... A>
std::string signature(void (*)(A...)) {
  return {type_code<A>()...};
}
const char* type_name(char code) {
  switch (code) {
    case 'p': return "a pointer";
    case 'l': return "a long long";
    case 'u': return "an unsigned long long";
    case 'i': return "an int";
    case 'f': return "a float";
    case 'd': return "a double";
  }
  return "?";
}

const std::unordered_map<std::string_view, std::string>& signatures() {
  static const std::unordered_map<std::string_view, std::string> table = {
#define STEP_KERNEL(name, types) {#name, signature(static_cast<void(*) types>(nullptr))},
#include "runtime/train/gpu/kernels/step_kernels.def"
#undef STEP_KERNEL
  };
  return table;
}

// Launches `name` over `items` items with `args` after the item count, each checked against the
// kernel's parameter types (a wrong type would be read as another on the GPU). No items: no launch.
void launch(KernelLauncher& l, const char* name, int64_t items, std::vector<Arg> args) {
  auto it = signatures().find(name);
  if (it == signatures().end()) throw std::logic_error(fmt::format("no step kernel {}", name));
  args.insert(args.begin(), I64(items));
  const std::string& sig = it->second;
  if (args.size() != sig.size())
    throw std::logic_error(
        fmt::format("step kernel {}: launched with {} arguments, it takes {}", name, args.size(), sig.size()));
  for (size_t k = 0; k < args.size(); ++k)
    if (args[k].code != sig[k])
      throw std::logic_error(fmt::format("step kernel {}: argument {} is {}, the kernel takes {}", name, k,
                                         type_name(args[k].code), type_name(sig[k])));
  if (items <= 0) return;
  std::vector<void*> params(args.size());
  for (size_t k = 0; k < args.size(); ++k) params[k] = args[k].bytes;
  l.launch(name, items, params.data());
}

// ---- geometry (the reference executor's conv_window, transpose_window and pool_window) ----

[[noreturn]] void unsupported(const GraphNode& n, const std::string& what) {
  throw std::logic_error(fmt::format("GPU step kernels: {} node{}{}: {}", model_op_name(n.op),
                                     n.layer.empty() ? "" : " of layer ", n.layer, what));
}

// The geometry is the reference executor's (ref::conv_window, transpose_window, pool_window).
ref::Window2d conv_window(const GraphNode& n, const Shape& x, const Shape& y, const Shape& kernel, int64_t rows) {
  return ref::conv_window(n.attrs_as<Conv2dAttrs>(), x, y, kernel, rows);
}
ref::Window2d transpose_window(const GraphNode& n, const Shape& x, const Shape& y, const Shape& kernel, int64_t rows) {
  return ref::transpose_window(n.attrs_as<Conv2dTransposeAttrs>(), x, y, kernel, rows);
}
ref::Window2d pool_window(const GraphNode& n, const Shape& x, const Shape& y, int64_t rows) {
  return ref::pool_window(&n.attrs_as<Pool2dAttrs>(), x, y, rows);
}

std::vector<Arg> conv_geometry(const ref::Window2d& w) {
  return {I64(w.batch),    I64(w.in_h),  I64(w.in_w),  I64(w.in_c),    I64(w.out_h),
          I64(w.out_w),    I64(w.out_c), I64(w.k_h),   I64(w.k_w),     I64(w.stride_h),
          I64(w.stride_w), I64(w.dil_h), I64(w.dil_w), I64(w.pad_top), I64(w.pad_left)};
}
std::vector<Arg> pool_geometry(const ref::Window2d& w) {
  return {I64(w.batch), I64(w.in_h), I64(w.in_w),     I64(w.in_c),     I64(w.out_h),   I64(w.out_w),
          I64(w.k_h),   I64(w.k_w),  I64(w.stride_h), I64(w.stride_w), I64(w.pad_top), I64(w.pad_left)};
}
std::vector<Arg> operator+(std::vector<Arg> a, const std::vector<Arg>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- reductions: how many blocks of rows ----

// Work items that fill a GPU: 132 SMs (H100, H200) x 2048 resident threads.
constexpr int64_t kFillItems = 132 * 2048;
// The fewest rows a block sums (fewer would make the partials the larger part of the work), and the most
// blocks (each combining thread reads one partial per block; a loss has a single such thread).
constexpr int64_t kMinBlockRows = 64;
constexpr int64_t kMaxBlocks = 1024;

struct RowBlocks {
  int64_t blocks = 1, rows_per_block = 1;
};

// Blocks of rows for a sum over `rows` rows of `outputs` values: enough blocks x outputs to fill a GPU,
// at least kMinBlockRows rows each, at most kMaxBlocks blocks. A function of the shape alone, so the sums
// never depend on the grid.
RowBlocks row_blocks(int64_t rows, int64_t outputs) {
  if (rows <= 0) return {};
  const int64_t want = (kFillItems + std::max<int64_t>(outputs, 1) - 1) / std::max<int64_t>(outputs, 1);
  const int64_t most = std::min((rows + kMinBlockRows - 1) / kMinBlockRows, kMaxBlocks);
  const int64_t blocks = std::clamp<int64_t>(want, 1, std::max<int64_t>(most, 1));
  const int64_t per = (rows + blocks - 1) / blocks;
  return {(rows + per - 1) / per, per};
}

// ---- scratch: areas of f64, each 256-byte aligned ----

constexpr size_t kScratchAlign = 256;

struct ScratchPlan {
  std::vector<size_t> offsets;
  size_t bytes = 0;
  void add(int64_t doubles) {
    offsets.push_back(bytes);
    bytes += (static_cast<size_t>(std::max<int64_t>(doubles, 0)) * sizeof(double) + kScratchAlign - 1) / kScratchAlign *
             kScratchAlign;
  }
};

// What each kind computes its sizes from.
struct NodeShapes {
  const ModelGraph& g;
  const GraphNode& n;
  int64_t rows;
  const Shape& shape(int id) const { return g.values.at(static_cast<size_t>(id)).shape; }
  int64_t count(int id) const { return shape_num_elements(g.full_shape(id, rows)); }
  const Shape& in_shape(size_t k) const { return shape(n.inputs.at(k)); }
  const Shape& out_shape(size_t k) const { return shape(n.outputs.at(k)); }
};

struct LossGeometry {
  int kind = 0;
  bool from_logits = false, sparse = false;
  double delta = 1.0;
  int64_t classes = 1, positions = 0;
};

LossGeometry loss_geometry(const NodeShapes& s) {
  const GraphNode& n = s.n;
  LossGeometry l;
  const LossAttrs& a = n.attrs_as<LossAttrs>();
  switch (a.kind) {  // kernels/loss.cuh's codes
    case LossKind::Mse: l.kind = 0; break;
    case LossKind::Mae: l.kind = 1; break;
    case LossKind::CrossEntropy: l.kind = 2; break;
    case LossKind::BinaryCrossEntropy: l.kind = 3; break;
    case LossKind::Huber: l.kind = 4; break;
  }
  l.from_logits = a.from_logits;
  l.sparse = a.sparse.value_or(false);
  if (l.sparse && a.kind != LossKind::CrossEntropy)
    unsupported(n, fmt::format("sparse targets for {}", enum_text(a.kind)));
  l.delta = a.delta.value_or(l.delta);
  const int64_t per_example = s.g.values.at(static_cast<size_t>(n.inputs.at(0))).elements_per_example();
  l.classes = s.in_shape(0).empty() ? 1 : s.in_shape(0).back();
  l.positions = a.kind == LossKind::CrossEntropy ? s.rows * (per_example / std::max<int64_t>(l.classes, 1))
                                                 : s.rows * per_example;
  return l;
}

// The scratch areas of a node, in the order launch_node uses them.
ScratchPlan scratch_plan(const NodeShapes& s) {
  ScratchPlan p;
  const GraphNode& n = s.n;
  switch (n.op) {
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::Conv2dTransposeBackwardKernel: {
      const Shape& k = s.out_shape(0);
      const Shape& y = n.op == ModelOp::Conv2dBackwardKernel ? s.in_shape(1) : s.in_shape(0);
      const int64_t elements = shape_num_elements(k), positions = s.rows * y[0] * y[1];
      p.add(row_blocks(positions, elements).blocks * elements);
      break;
    }
    case ModelOp::DenseBackwardKernel: {
      const Shape& k = s.out_shape(0);
      const int64_t elements = k[0] * k[1];
      p.add(row_blocks(s.count(n.inputs[0]) / k[0], elements).blocks * elements);
      break;
    }
    case ModelOp::BiasBackward: {
      const int64_t c = s.out_shape(0).back();
      p.add(row_blocks(s.count(n.inputs[0]) / c, c).blocks * c);
      break;
    }
    case ModelOp::BatchNorm: {
      if (n.attrs_as<BatchNormAttrs>().inference) break;
      const int64_t c = s.in_shape(0).back(), r = s.count(n.inputs[0]) / c;
      const int64_t blocks = (r + kStatisticsBlock - 1) / kStatisticsBlock;
      p.add(blocks * c);  // block means
      p.add(blocks * c);  // block sums of squared deviations
      p.add(2 * c);       // the f64 mean and variance
      break;
    }
    case ModelOp::BatchNormBackward: {
      const int64_t c = s.in_shape(0).back(), r = s.count(n.inputs[0]) / c;
      p.add(2 * row_blocks(r, c).blocks * c);  // partial sum(dy), sum(dy xhat)
      p.add(2 * c);                            // their totals
      break;
    }
    case ModelOp::LayerNorm: {
      const int64_t c = s.in_shape(0).back(), r = s.count(n.inputs[0]) / c;
      p.add(2 * r);  // each row's f64 mean and variance
      break;
    }
    case ModelOp::LayerNormBackward: {
      const int64_t c = s.in_shape(0).back(), r = s.count(n.inputs[0]) / c;
      p.add(2 * r);                            // each row's sums
      p.add(2 * row_blocks(r, c).blocks * c);  // partial dgamma, dbeta
      break;
    }
    case ModelOp::Loss: p.add(row_blocks(loss_geometry(s).positions, 1).blocks); break;
    case ModelOp::EmbeddingBackward:  // the counting sort's i64 starts per id and positions in id order
      p.add(n.attrs_as<EmbeddingAttrs>().input_dim + 1);
      p.add(s.count(n.inputs[0]));
      break;
    default: break;
  }
  return p;
}

// ---- the nodes ----

struct NodeLaunch : NodeShapes {
  KernelLauncher& l;
  const NodeOperands& o;
  ScratchPlan scratch;
  NodeLaunch(KernelLauncher& launcher, const NodeOperands& ops)
      : NodeShapes{*ops.graph, *ops.node, ops.rows}, l(launcher), o(ops), scratch(scratch_plan(*this)) {}
  DevPtr in(size_t k) const { return o.inputs.at(k); }
  DevPtr out(size_t k) const { return o.outputs.at(k); }
  DevPtr area(size_t k) const { return o.scratch + scratch.offsets.at(k); }
  int64_t in_count(size_t k) const { return count(n.inputs.at(k)); }
  int64_t out_count(size_t k) const { return count(n.outputs.at(k)); }
  void run(const char* name, int64_t items, std::vector<Arg> args) const { launch(l, name, items, std::move(args)); }
  void sum_blocks(DevPtr partial, int64_t blocks, int64_t elements, DevPtr dst) const {
    run("sum_blocks", elements, {P(partial), I64(blocks), P(dst)});
  }
};

void launch_kind(const NodeLaunch& k, bool relu) {
  const GraphNode& n = k.n;
  const int64_t rows = k.rows;
  const int r = relu ? 1 : 0;
  switch (n.op) {
    case ModelOp::Expr: unsupported(n, "expr nodes are the executor's (printed from their loop nests)");
    case ModelOp::OptimizerStep: unsupported(n, "the optimizer runs through launch_optimizer_step");
    case ModelOp::Conv2d: {
      auto w = conv_window(n, k.in_shape(0), k.out_shape(0), k.in_shape(1), rows);
      k.run("conv2d_forward", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.out(0))} + conv_geometry(w) + std::vector{I32(r)});
      return;
    }
    case ModelOp::Conv2dBackwardInput: {
      auto w = conv_window(n, k.out_shape(0), k.in_shape(0), k.in_shape(1), rows);
      k.run("conv2d_backward_input", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.in(1)), P(0), P(k.out(0))} + conv_geometry(w) + std::vector{I32(0)});
      return;
    }
    case ModelOp::Conv2dTranspose: {
      auto w = transpose_window(n, k.in_shape(0), k.out_shape(0), k.in_shape(1), rows);
      k.run("conv2d_backward_input", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.out(0))} + conv_geometry(w) + std::vector{I32(r)});
      return;
    }
    case ModelOp::Conv2dTransposeBackwardInput: {
      auto w = transpose_window(n, k.out_shape(0), k.in_shape(0), k.in_shape(1), rows);
      k.run("conv2d_forward", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.in(1)), P(0), P(k.out(0))} + conv_geometry(w) + std::vector{I32(0)});
      return;
    }
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::Conv2dTransposeBackwardKernel: {
      // conv2d_transpose's kernel gradient is a conv2d's with x and dy exchanged (the reference's call).
      const bool transpose = n.op == ModelOp::Conv2dTransposeBackwardKernel;
      auto w = transpose ? transpose_window(n, k.in_shape(0), k.in_shape(1), k.out_shape(0), rows)
                         : conv_window(n, k.in_shape(0), k.in_shape(1), k.out_shape(0), rows);
      const DevPtr x = transpose ? k.in(1) : k.in(0), dy = transpose ? k.in(0) : k.in(1);
      const int64_t elements = k.out_count(0);
      const RowBlocks b = row_blocks(w.batch * w.out_h * w.out_w, elements);
      k.run("conv2d_backward_kernel_partial", b.blocks * elements,
            std::vector<Arg>{P(x), P(dy), P(k.area(0))} + conv_geometry(w) + std::vector{I64(b.rows_per_block)});
      k.sum_blocks(k.area(0), b.blocks, elements, k.out(0));
      return;
    }
    case ModelOp::Dense: {
      const Shape& kern = k.in_shape(1);
      k.run("dense_forward", k.in_count(0) / kern[0] * kern[1],
            {P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.out(0)), I64(kern[0]), I64(kern[1]), I32(r)});
      return;
    }
    case ModelOp::DenseBackwardInput: {
      const Shape& kern = k.in_shape(1);
      k.run("dense_backward_input", k.in_count(0) / kern[1] * kern[0],
            {P(k.in(0)), P(k.in(1)), P(k.out(0)), I64(kern[0]), I64(kern[1])});
      return;
    }
    case ModelOp::DenseBackwardKernel: {
      const Shape& kern = k.out_shape(0);
      const int64_t elements = kern[0] * kern[1], dense_rows = k.in_count(0) / kern[0];
      const RowBlocks b = row_blocks(dense_rows, elements);
      k.run("dense_backward_kernel_partial", b.blocks * elements,
            {P(k.in(0)), P(k.in(1)), P(k.area(0)), I64(dense_rows), I64(kern[0]), I64(kern[1]), I64(b.rows_per_block)});
      k.sum_blocks(k.area(0), b.blocks, elements, k.out(0));
      return;
    }
    case ModelOp::BiasBackward: {
      const int64_t c = k.out_shape(0).back(), bias_rows = k.in_count(0) / c;
      const RowBlocks b = row_blocks(bias_rows, c);
      k.run("bias_backward_partial", b.blocks * c,
            {P(k.in(0)), P(k.area(0)), I64(bias_rows), I64(c), I64(b.rows_per_block)});
      k.sum_blocks(k.area(0), b.blocks, c, k.out(0));
      return;
    }
    case ModelOp::MaxPool2d:
      k.run("max_pool2d_forward", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.out(0))} +
                pool_geometry(pool_window(n, k.in_shape(0), k.out_shape(0), rows)));
      return;
    case ModelOp::MaxPool2dBackward:
      k.run("max_pool2d_backward", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.in(1)), P(k.out(0))} +
                pool_geometry(pool_window(n, k.in_shape(0), k.in_shape(1), rows)));
      return;
    case ModelOp::AvgPool2d:
      k.run("avg_pool2d_forward", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.out(0))} +
                pool_geometry(pool_window(n, k.in_shape(0), k.out_shape(0), rows)));
      return;
    case ModelOp::AvgPool2dBackward:
      k.run("avg_pool2d_backward", k.out_count(0),
            std::vector<Arg>{P(k.in(0)), P(k.out(0))} +
                pool_geometry(pool_window(n, k.out_shape(0), k.in_shape(0), rows)));
      return;
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalMaxPool: {
      const Shape& x = k.in_shape(0);
      k.run(n.op == ModelOp::GlobalAvgPool ? "global_avg_pool_forward" : "global_max_pool_forward", rows * x[2],
            {P(k.in(0)), P(k.out(0)), I64(x[0] * x[1]), I64(x[2])});
      return;
    }
    case ModelOp::GlobalAvgPoolBackward: {
      const Shape& x = k.out_shape(0);
      k.run("global_avg_pool_backward", k.out_count(0), {P(k.in(0)), P(k.out(0)), I64(x[0] * x[1]), I64(x[2])});
      return;
    }
    case ModelOp::GlobalMaxPoolBackward: {
      const Shape& x = k.in_shape(0);
      k.run("global_max_pool_backward", rows * x[2],
            {P(k.in(0)), P(k.in(1)), P(k.out(0)), I64(x[0] * x[1]), I64(x[2])});
      return;
    }
    case ModelOp::Upsample2d:
    case ModelOp::Upsample2dBackward: {
      const bool forward = n.op == ModelOp::Upsample2d;
      // x is the small image, y the upsampled one (the backward node's output is dx, its input dy).
      auto w = forward ? ref::pool_window(nullptr, k.in_shape(0), k.out_shape(0), rows)
                       : ref::pool_window(nullptr, k.out_shape(0), k.in_shape(0), rows);
      const char* name = nullptr;
      switch (n.attrs_as<Upsample2dAttrs>().method) {
        case Interpolation::Nearest:
          name = forward ? "upsample2d_nearest_forward" : "upsample2d_nearest_backward";
          break;
        case Interpolation::Bilinear:
          name = forward ? "upsample2d_bilinear_forward" : "upsample2d_bilinear_backward";
          break;
      }
      if (!name) unsupported(n, "an interpolation without a kernel");
      k.run(name, k.out_count(0),
            {P(k.in(0)), P(k.out(0)), I64(w.in_h), I64(w.in_w), I64(w.in_c), I64(w.out_h), I64(w.out_w)});
      return;
    }
    case ModelOp::LeakyRelu:
      k.run("leaky_relu_forward", k.in_count(0), {P(k.in(0)), P(k.out(0)), F64(n.attrs_as<LeakyReluAttrs>().alpha)});
      return;
    case ModelOp::LeakyReluBackward:
      k.run("leaky_relu_backward", k.in_count(0),
            {P(k.in(0)), P(k.in(1)), P(k.out(0)), F64(n.attrs_as<LeakyReluAttrs>().alpha)});
      return;
    case ModelOp::Gelu: k.run("gelu_forward", k.in_count(0), {P(k.in(0)), P(k.out(0))}); return;
    case ModelOp::GeluBackward: k.run("gelu_backward", k.in_count(0), {P(k.in(0)), P(k.in(1)), P(k.out(0))}); return;
    case ModelOp::Softmax:
    case ModelOp::SoftmaxBackward: {
      const Shape full = k.g.full_shape(n.inputs[0], rows);
      const int64_t axis = n.attrs_as<SoftmaxAttrs>().axis + 1;
      if (axis < 1 || axis >= static_cast<int64_t>(full.size())) unsupported(n, fmt::format("axis {}", axis - 1));
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < axis; ++i) outer *= full[static_cast<size_t>(i)];
      for (size_t i = static_cast<size_t>(axis) + 1; i < full.size(); ++i) inner *= full[i];
      const int64_t len = full[static_cast<size_t>(axis)];
      if (n.op == ModelOp::Softmax)
        k.run("softmax_forward", outer * inner, {P(k.in(0)), P(k.out(0)), I64(len), I64(inner)});
      else k.run("softmax_backward", outer * inner, {P(k.in(0)), P(k.in(1)), P(k.out(0)), I64(len), I64(inner)});
      return;
    }
    case ModelOp::BatchNorm: {
      const int64_t c = k.in_shape(0).back(), norm_rows = k.in_count(0) / c;
      const BatchNormAttrs& a = n.attrs_as<BatchNormAttrs>();
      const double eps = a.epsilon;
      if (a.inference) {  // the moving statistics normalize, and are the statistics it reports
        k.run("batch_norm_inference_apply", k.in_count(0),
              {P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.in(3)), P(k.in(4)), P(k.out(0)), I64(c), F64(eps)});
        k.run("copy", c, {P(k.in(3)), P(k.out(1))});
        k.run("copy", c, {P(k.in(4)), P(k.out(2))});
        return;
      }
      const int64_t blocks = (norm_rows + kStatisticsBlock - 1) / kStatisticsBlock;
      k.run("batch_norm_block_statistics", blocks * c,
            {P(k.in(0)), P(k.area(0)), P(k.area(1)), I64(norm_rows), I64(c), I64(kStatisticsBlock)});
      k.run(
          "batch_norm_merge_statistics", c,
          {P(k.area(0)), P(k.area(1)), P(k.area(2)), P(k.out(1)), P(k.out(2)), I64(norm_rows), I64(kStatisticsBlock)});
      k.run("batch_norm_apply", k.in_count(0),
            {P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.area(2)), P(k.out(0)), I64(c), F64(eps)});
      return;
    }
    case ModelOp::BatchNormBackward: {
      const int64_t c = k.in_shape(0).back(), norm_rows = k.in_count(0) / c;
      const double eps = n.attrs_as<BatchNormAttrs>().epsilon;
      const RowBlocks b = row_blocks(norm_rows, c);
      k.run("batch_norm_backward_partial", b.blocks * c,
            {P(k.in(0)), P(k.in(1)), P(k.in(3)), P(k.in(4)), P(k.area(0)), I64(norm_rows), I64(c),
             I64(b.rows_per_block), F64(eps)});
      k.run("batch_norm_backward_combine", c, {P(k.area(0)), I64(b.blocks), P(k.area(1)), P(k.out(1)), P(k.out(2))});
      k.run("batch_norm_backward_dx", k.in_count(0),
            {P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.in(3)), P(k.in(4)), P(k.area(1)), P(k.out(0)), I64(norm_rows),
             I64(c), F64(eps)});
      return;
    }
    case ModelOp::LayerNorm: {
      const int64_t c = k.in_shape(0).back(), norm_rows = k.in_count(0) / c;
      const double eps = n.attrs_as<LayerNormAttrs>().epsilon;
      k.run("layer_norm_statistics", norm_rows, {P(k.in(0)), P(k.area(0)), P(k.out(1)), P(k.out(2)), I64(c)});
      k.run("layer_norm_apply", k.in_count(0),
            {P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.area(0)), P(k.out(0)), I64(c), F64(eps)});
      return;
    }
    case ModelOp::LayerNormBackward: {
      const int64_t c = k.in_shape(0).back(), norm_rows = k.in_count(0) / c;
      const double eps = n.attrs_as<LayerNormAttrs>().epsilon;
      k.run("layer_norm_backward_row_sums", norm_rows,
            {P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.in(3)), P(k.in(4)), P(k.area(0)), I64(c), F64(eps)});
      k.run("layer_norm_backward_dx", k.in_count(0),
            {P(k.in(0)), P(k.in(1)), P(k.in(2)), P(k.in(3)), P(k.in(4)), P(k.area(0)), P(k.out(0)), I64(c), F64(eps)});
      const RowBlocks b = row_blocks(norm_rows, c);
      k.run("layer_norm_backward_param_partial", b.blocks * c,
            {P(k.in(0)), P(k.in(1)), P(k.in(3)), P(k.in(4)), P(k.area(1)), I64(norm_rows), I64(c),
             I64(b.rows_per_block), F64(eps)});
      k.sum_blocks(k.area(1), b.blocks, c, k.out(1));
      k.sum_blocks(k.area(1) + static_cast<DevPtr>(b.blocks * c) * sizeof(double), b.blocks, c, k.out(2));
      return;
    }
    case ModelOp::Dropout: {
      const int64_t per = k.g.values.at(static_cast<size_t>(n.inputs[0])).elements_per_example();
      const DropoutAttrs& a = n.attrs_as<DropoutAttrs>();
      if (a.inference) {  // evaluation: everything kept, nothing scaled
        k.run("fill", rows * per, {P(k.out(1)), F32(1.0f)});
        k.run("copy", rows * per, {P(k.in(0)), P(k.out(0))});
        return;
      }
      if (!k.o.step_counter) unsupported(n, "no device step counter (NodeOperands::step_counter)");
      const double rate = a.rate;
      const uint64_t stream = ref::kDropoutStreamBase + static_cast<uint64_t>(a.stream);
      k.run("dropout_forward", rows * ((per + 3) / 4),
            {P(k.in(0)), P(k.out(0)), P(k.out(1)), I64(per), F64(rate), F32(static_cast<float>(1.0 / (1.0 - rate))),
             U64(k.o.seed), U64(stream), P(k.o.step_counter)});
      return;
    }
    case ModelOp::Embedding: {
      const EmbeddingAttrs& a = n.attrs_as<EmbeddingAttrs>();
      k.run("embedding_forward", k.out_count(0),
            {P(k.in(0)), P(k.in(1)), P(k.out(0)), I64(a.input_dim), I64(a.output_dim)});
      return;
    }
    case ModelOp::EmbeddingBackward: {
      const EmbeddingAttrs& a = n.attrs_as<EmbeddingAttrs>();
      k.run("embedding_sort_ids", 1, {P(k.in(0)), I64(k.in_count(0)), I64(a.input_dim), P(k.area(0)), P(k.area(1))});
      k.run("embedding_backward", k.out_count(0),
            {P(k.in(1)), P(k.area(0)), P(k.area(1)), P(k.out(0)), I64(a.output_dim)});
      return;
    }
    case ModelOp::DropoutBackward: k.run("multiply", k.in_count(0), {P(k.in(0)), P(k.in(1)), P(k.out(0))}); return;
    case ModelOp::Loss:
    case ModelOp::LossBackward: {
      const LossGeometry lg = loss_geometry(k);
      const double scale = 1.0 / static_cast<double>(lg.positions);
      if (n.op == ModelOp::Loss) {
        const RowBlocks b = row_blocks(lg.positions, 1);
        k.run("loss_partial", b.blocks,
              {P(k.in(0)), P(k.in(1)), P(k.area(0)), I64(lg.positions), I64(b.rows_per_block), I32(lg.kind),
               I32(lg.from_logits), I32(lg.sparse), I64(lg.classes), F64(lg.delta)});
        k.run("loss_combine", 1, {P(k.area(0)), I64(b.blocks), F64(scale), P(k.out(0))});
        return;
      }
      DevPtr loss_scale = 0;
      if (n.attrs_as<LossAttrs>().loss_scale) {  // mixed_fp16: the backward pass starts from loss * scale
        if (!k.o.loss_scale) unsupported(n, "no device loss scale (NodeOperands::loss_scale)");
        loss_scale = k.o.loss_scale;
      }
      k.run("loss_backward", lg.positions,
            {P(k.in(0)), P(k.in(1)), P(k.out(0)), I32(lg.kind), I32(lg.from_logits), I32(lg.sparse), I64(lg.classes),
             F64(lg.delta), F64(scale), P(loss_scale)});
      return;
    }
    case ModelOp::MovingAverage: {
      const int64_t c = k.g.values.at(static_cast<size_t>(n.inputs[0])).elements_per_example();
      k.run("moving_average", c,
            {P(k.in(0)), P(k.in(1)), F32(static_cast<float>(n.attrs_as<MovingAverageAttrs>().momentum))});
      return;
    }
    case ModelOp::Round:
      switch (n.attrs_as<RoundAttrs>().dtype) {
        case Float16::BF16: k.run("round_bf16", k.in_count(0), {P(k.in(0)), P(k.out(0))}); return;
        case Float16::F16: k.run("round_f16", k.in_count(0), {P(k.in(0)), P(k.out(0))}); return;
      }
      break;
  }
  unsupported(n, "a kind the step kernels do not know");
}

}  // namespace

size_t node_scratch_bytes(const ModelGraph& g, const GraphNode& n, int64_t rows) {
  return scratch_plan(NodeShapes{g, n, rows}).bytes;
}

void launch_node(KernelLauncher& launcher, const NodeOperands& o) {
  if (!o.graph || !o.node) throw std::logic_error("launch_node: no graph or node");
  const GraphNode& n = *o.node;
  if (o.inputs.size() != n.inputs.size() || o.outputs.size() != n.outputs.size())
    unsupported(n, fmt::format("{} inputs and {} outputs given for {} and {}", o.inputs.size(), o.outputs.size(),
                               n.inputs.size(), n.outputs.size()));
  for (DevPtr p : o.inputs)
    if (!p) unsupported(n, "an input without a device buffer");
  for (DevPtr p : o.outputs)
    if (!p) unsupported(n, "an output without a device buffer");
  // A fused activation (compiler/train/passes/fuse_activation.cpp): only the weighted layers' attributes
  // have one (model_attrs.def), and their kernels apply it themselves (their relu flag).
  bool relu = false;
  if (const std::optional<Activation> act = fused_activation(n.attrs)) switch (*act) {
      case Activation::Relu: relu = true; break;
    }
  // The executor's claim (gpu_kernel_claim.h) gives expr and optimizer_step kernels of their own.
  switch (node_kernel_of(n.op)) {
    case NodeKernel::Generated: unsupported(n, "expr nodes are the executor's (printed from their loop nests)");
    case NodeKernel::Optimizer: unsupported(n, "the optimizer runs through launch_optimizer_step");
    case NodeKernel::StepKernels:
    case NodeKernel::Cudnn:
    case NodeKernel::CublasLt: break;
  }
  NodeLaunch k(launcher, o);
  if (!k.scratch.offsets.empty() && !o.scratch) unsupported(n, "no scratch (node_scratch_bytes)");
  launch_kind(k, relu);
}

// ---- the optimizer ----

namespace {

// The finite check's levels: kFiniteSweep threads sweep the gradients (coalesced), kFiniteFlags threads
// those flags, one thread the last few (whether all are finite does not depend on how they are split).
constexpr int64_t kFiniteSweep = 65536;
constexpr int64_t kFiniteFlags = 256;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::array<float, 3> optimizer_step_scalars(const OptimizerConfig& c, int64_t iterations) {
  // optimizer_step's own expressions, so that the f32 values are its bits.
  const double lr_now = c.schedule.at(iterations);
  const double t = static_cast<double>(iterations + 1);
  const float alpha = static_cast<float>(lr_now * std::sqrt(1 - std::pow(c.beta2, t)) / (1 - std::pow(c.beta1, t)));
  return {static_cast<float>(lr_now), alpha, static_cast<float>(lr_now * c.weight_decay)};
}

namespace {

// The optimizer's scratch: the global norm's block sums, the finite check's two levels of flags.
ScratchPlan optimizer_scratch(int64_t n) {
  ScratchPlan p;
  p.add(ceil_div(n, kNormBlock));
  p.add(kFiniteSweep);
  p.add(kFiniteFlags);
  return p;
}

}  // namespace

size_t optimizer_scratch_bytes(int64_t n) { return optimizer_scratch(n).bytes; }

void launch_optimizer_step(KernelLauncher& l, const OptimizerConfig& c, const OptimizerDeviceState& s) {
  auto missing = [](const char* what) {
    throw std::logic_error(fmt::format("launch_optimizer_step: no device buffer for {}", what));
  };
  const bool sgd = c.kind == OptimizerKind::Sgd;
  if (!s.params) missing("the parameters");
  if (!s.grads) missing("the gradients");
  if (!s.step_scalars) missing("the step's scalars");
  if (!s.status) missing("the status");
  if (!s.scratch) missing("the scratch");
  if ((!sgd || c.momentum != 0) && !s.m) missing("the first moment");
  if (!sgd && !s.v) missing("the second moment");
  const bool loss_scaled = s.loss_scale_state != 0;
  if (loss_scaled && (!s.loss || !s.loss_scale_value)) missing("the loss and the loss scale (mixed_fp16)");
  const bool clip = c.global_clipnorm > 0;
  const ScratchPlan p = optimizer_scratch(s.n);
  const DevPtr norm_partial = s.scratch + p.offsets[0];
  if (loss_scaled) {  // LossScale::unscale_or_skip, on the device
    const DevPtr sweep = s.scratch + p.offsets[1], flags = s.scratch + p.offsets[2];
    const int64_t threads = std::clamp<int64_t>(s.n, 1, kFiniteSweep), groups = std::min(threads, kFiniteFlags);
    launch(l, "grad_finite_partial", threads, {P(s.grads), P(sweep), I64(s.n)});
    launch(l, "all_nonzero", groups, {P(sweep), P(flags), I64(threads)});
    launch(l, "loss_scale_update", 1,
           {P(s.loss), P(flags), I64(groups), P(s.loss_scale_state), P(s.status), P(s.loss_scale_value)});
    launch(l, "unscale_gradients", s.n, {P(s.grads), P(s.status)});
  }
  if (clip) {
    const int64_t blocks = ceil_div(s.n, kNormBlock);
    launch(l, "grad_norm_partial", blocks, {P(s.grads), P(norm_partial), I64(s.n), I64(kNormBlock)});
    launch(l, "grad_norm_finish", 1, {P(norm_partial), I64(blocks), F64(c.global_clipnorm), P(s.status)});
  }
  const int kind = sgd ? (c.momentum == 0 ? 0 : 1) : 2;  // kernels/optimizer.cuh's SK_OPT_*
  launch(l, "optimizer_update", s.n,
         {P(s.params), P(s.grads), P(s.m), P(s.v), P(s.step_scalars), P(s.status), I32(kind), I32(clip ? 1 : 0),
          I32(loss_scaled ? 1 : 0), I32(c.weight_decay > 0 ? 1 : 0), F32(static_cast<float>(c.momentum)),
          F32(static_cast<float>(1 - c.beta1)), F32(static_cast<float>(1 - c.beta2)), F32(static_cast<float>(c.eps))});
}

OptimizerStatus optimizer_status(const std::array<double, kOptimizerStatusSlots>& status) {
  OptimizerStatus s;
  s.grad_norm = status[0];
  s.clip_scale = status[1];
  s.skipped = status[2] != 0;
  return s;
}

std::array<double, kLossScaleSlots> loss_scale_to_device(const LossScale& s) {
  return {s.scale, static_cast<double>(s.good_steps), static_cast<double>(s.skipped), s.last_skipped ? 1.0 : 0.0};
}

LossScale loss_scale_from_device(const std::array<double, kLossScaleSlots>& state) {
  LossScale s;
  s.scale = state[0];
  s.good_steps = static_cast<int64_t>(state[1]);
  s.skipped = static_cast<int64_t>(state[2]);
  s.last_skipped = state[3] != 0;
  return s;
}

void launch_hwio_to_krsc(KernelLauncher& l, DevPtr hwio, DevPtr krsc, int64_t kh, int64_t kw, int64_t in, int64_t out) {
  launch(l, "hwio_to_krsc", kh * kw * in * out, {P(hwio), P(krsc), I64(kh), I64(kw), I64(in), I64(out)});
}

void launch_krsc_to_hwio(KernelLauncher& l, DevPtr krsc, DevPtr hwio, int64_t kh, int64_t kw, int64_t in, int64_t out) {
  launch(l, "krsc_to_hwio", kh * kw * in * out, {P(krsc), P(hwio), I64(kh), I64(kw), I64(in), I64(out)});
}

}  // namespace pipec::gpu

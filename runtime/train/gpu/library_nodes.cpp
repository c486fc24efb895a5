#include "runtime/train/gpu/library_nodes.h"

#include <algorithm>
#include <initializer_list>
#include <set>

#include <fmt/format.h>

#include "runtime/train/gpu/cublaslt_dense.h"
#include "runtime/train/gpu/cudnn_conv.h"
#include "runtime/train/gpu/gpu_kernel_claim.h"
#include "runtime/train/gpu/node_kernels.h"
#include "runtime/train/gpu/tf32_exact_nodes.h"

namespace pipec::gpu {

struct LibraryNodes::Impl {
  // Each library is told how aligned the pointers of a call are (it picks kernels by it): 16 bytes for
  // the arena's values and most parameters, 4 for a parameter whose offset in the flat buffer is not a
  // multiple of four floats; and whether the call's operands are 16-bit values (tf32_exact_nodes.h), which
  // lets it take TF32 tensor cores. One wrapper per alignment and mode, made when a call first needs it;
  // [1][0] (aligned, the run's own TF32 setting) is made at once and says whether the library is there.
  std::unique_ptr<CudnnConv> conv[2][2];
  std::unique_ptr<CublasLtDense> dense[2][2];
  LibraryCallOptions options;
  const ModelGraph* graph = nullptr;  // the graph tf32_exact is for
  std::vector<bool> tf32_exact;       // per node of it
  std::set<size_t> exact_nodes_run;   // nodes run on TF32 tensor cores for their 16-bit operands
  DeviceBlock workspace;
  DeviceBlock krsc[2];  // a kernel's KRSC copy, and a kernel gradient's KRSC result
};

LibraryNodes::LibraryNodes(StepDevice& device, bool allow_tf32) : d_(device), impl_(std::make_unique<Impl>()) {
  LibraryCallOptions& options = impl_->options;
  options.allow_tf32 = allow_tf32;
  const GpuLibraries& libs = device.libraries();
  if (libs.cudnn) conv_for(true, false);
  if (libs.cublaslt) dense_for(true, false);
}

LibraryNodes::~LibraryNodes() = default;

std::string LibraryNodes::describe() const {
  const GpuLibraries& libs = d_.libraries();
  std::string conv = impl_->conv[1][0]
                         ? fmt::format("conv2d on cuDNN{}", libs.cudnn_version.empty() ? "" : " " + libs.cudnn_version)
                         : fmt::format("conv2d on pipec's kernels (no cuDNN: {})", libs.cudnn_missing);
  std::string dense =
      impl_->dense[1][0]
          ? fmt::format("dense on cuBLASLt{}", libs.cublaslt_version.empty() ? "" : " " + libs.cublaslt_version)
          : fmt::format("dense on pipec's kernels (no cuBLASLt: {})", libs.cublaslt_missing);
  std::string text = conv + ", " + dense;
  if (!impl_->exact_nodes_run.empty())
    text += fmt::format(" ({} of their nodes on TF32 tensor cores, exact for their bf16 or fp16 operands)",
                        impl_->exact_nodes_run.size());
  return text;
}

namespace {

bool aligned16(std::initializer_list<DevPtr> ptrs) {
  for (DevPtr p : ptrs)
    if (p % 16 != 0) return false;
  return true;
}

}  // namespace

LibraryCallOptions LibraryNodes::options_for(bool aligned, bool tf32_exact) const {
  LibraryCallOptions o = impl_->options;
  if (!aligned) o.alignment = 4;
  o.tf32_exact_operands = tf32_exact;
  return o;
}

namespace {

// The wrapper in `slot`, made on the device's stream with `options` the first time.
template <class Wrapper, class Api>
Wrapper& made_once(std::unique_ptr<Wrapper>& slot, const Api& api, const StepDevice& d, LibraryCallOptions options) {
  if (!slot) slot = std::make_unique<Wrapper>(api, static_cast<cuda::CUstream>(d.stream()), options);
  return *slot;
}

}  // namespace

CudnnConv& LibraryNodes::conv_for(bool aligned, bool tf32_exact) {
  return made_once(impl_->conv[aligned][tf32_exact], *d_.libraries().cudnn, d_, options_for(aligned, tf32_exact));
}

CublasLtDense& LibraryNodes::dense_for(bool aligned, bool tf32_exact) {
  return made_once(impl_->dense[aligned][tf32_exact], *d_.libraries().cublaslt, d_, options_for(aligned, tf32_exact));
}

bool LibraryNodes::tf32_exact(const NodeOperands& o) {
  Impl& m = *impl_;
  if (m.options.allow_tf32 || m.options.dtype != GpuDType::F32) return false;  // TF32 already, or not f32 data
  if (m.graph != o.graph) {
    m.graph = o.graph;
    m.tf32_exact = tf32_exact_nodes(*o.graph);
  }
  const size_t index = static_cast<size_t>(o.node - o.graph->nodes.data());
  const bool exact = index < m.tf32_exact.size() && m.tf32_exact[index];
  if (exact) m.exact_nodes_run.insert(index);
  return exact;
}

DeviceWorkspace LibraryNodes::workspace(size_t bytes) {
  if (impl_->workspace.bytes() < bytes) impl_->workspace = DeviceBlock(d_, bytes);
  return DeviceWorkspace{impl_->workspace.ptr(), impl_->workspace.bytes()};
}

DevPtr LibraryNodes::krsc(int slot, size_t bytes) {
  DeviceBlock& b = impl_->krsc[slot];
  if (b.bytes() < bytes) b = DeviceBlock(d_, bytes);
  return b.ptr();
}

bool LibraryNodes::run(const NodeOperands& o) {
  switch (node_kernel_of(o.node->op)) {  // the executor's claim
    case NodeKernel::Cudnn: return impl_->conv[1][0] && run_conv(o);
    case NodeKernel::CublasLt: return impl_->dense[1][0] && run_dense(o);
    default: return false;
  }
}

bool LibraryNodes::run_conv(const NodeOperands& o) {
  const ModelGraph& g = *o.graph;
  const GraphNode& n = *o.node;
  const ConvNodeCall call = conv_node_call(g, n, o.rows);
  auto operand = [&](NodeOperand which) {
    switch (which) {
      case NodeOperand::Input0: return o.inputs.at(0);
      case NodeOperand::Input1: return o.inputs.at(1);
      case NodeOperand::Output0: return o.outputs.at(0);
    }
    return DevPtr{0};
  };
  // The Keras kernel [kh, kw, a, b] (HWIO, or HWOI for the transpose) is KRSC [b, kh, kw, a]: the
  // last axis moved first. Its shape is the kernel operand's (an input, or the gradient output).
  const bool writes_filter = call.kind == ConvKind::BackwardFilter;
  const int kernel_value = writes_filter ? n.outputs.at(0) : n.inputs.at(1);
  const Shape& k = g.values.at(static_cast<size_t>(kernel_value)).shape;
  const size_t kernel_bytes = static_cast<size_t>(shape_num_elements(k)) * sizeof(float);
  const DevPtr keras_kernel = operand(call.filter);
  const DevPtr filter = krsc(writes_filter ? 1 : 0, kernel_bytes);
  if (!writes_filter) launch_hwio_to_krsc(d_.step_kernels(), keras_kernel, filter, k[0], k[1], k[2], k[3]);
  CudnnConv& conv = conv_for(aligned16({operand(call.x), filter, operand(call.y)}), tf32_exact(o));
  const DeviceWorkspace ws = workspace(conv.workspace_bytes(call.kind, call.geometry, n.layer));
  conv.run(call.kind, call.geometry, operand(call.x), filter, operand(call.y), ws, n.layer);
  if (writes_filter) launch_krsc_to_hwio(d_.step_kernels(), filter, keras_kernel, k[0], k[1], k[2], k[3]);
  // The forward kinds' bias (input 2) and fused relu.
  if (n.op == ModelOp::Conv2d || n.op == ModelOp::Conv2dTranspose) {
    const std::optional<Activation> act = fused_activation(n.attrs);
    long long items = shape_num_elements(g.full_shape(n.outputs[0], o.rows));
    DevPtr y = o.outputs.at(0), bias = o.inputs.at(2);
    long long channels = g.values[n.outputs[0]].shape.back();
    int relu = 0;
    if (act) switch (*act) {
        case Activation::Relu: relu = 1; break;
      }
    void* params[] = {&items, &y, &bias, &channels, &relu};
    d_.step_kernels().launch("bias_add", items, params);
  }
  ++conv_calls_;
  return true;
}

bool LibraryNodes::run_dense(const NodeOperands& o) {
  const ModelGraph& g = *o.graph;
  const GraphNode& n = *o.node;
  auto count = [&](int v) { return shape_num_elements(g.full_shape(v, o.rows)); };
  DenseShape s;
  CublasLtDense& lt =
      dense_for(std::all_of(o.inputs.begin(), o.inputs.end(), [](DevPtr p) { return p % 16 == 0; }) &&
                    std::all_of(o.outputs.begin(), o.outputs.end(), [](DevPtr p) { return p % 16 == 0; }),
                tf32_exact(o));
  switch (n.op) {
    case ModelOp::Dense: {
      const Shape& k = g.values[n.inputs[1]].shape;
      s = {count(n.inputs[0]) / k[0], k[0], k[1]};
      bool relu = false;
      if (const std::optional<Activation> act = n.attrs_as<DenseAttrs>().activation) switch (*act) {
          case Activation::Relu: relu = true; break;
        }
      const DenseCall c = relu ? DenseCall::ForwardRelu : DenseCall::Forward;
      const DeviceWorkspace ws = workspace(lt.workspace_bytes(c, s, n.layer));
      lt.forward(s, relu, o.inputs[0], o.inputs[1], o.inputs[2], o.outputs[0], ws, n.layer);
      break;
    }
    case ModelOp::DenseBackwardInput: {  // dy, kernel -> dx
      const Shape& k = g.values[n.inputs[1]].shape;
      s = {count(n.inputs[0]) / k[1], k[0], k[1]};
      const DeviceWorkspace ws = workspace(lt.workspace_bytes(DenseCall::BackwardInput, s, n.layer));
      lt.backward_input(s, o.inputs[0], o.inputs[1], o.outputs[0], ws, n.layer);
      break;
    }
    case ModelOp::DenseBackwardKernel: {  // x, dy -> dkernel
      const Shape& k = g.values[n.outputs[0]].shape;
      s = {count(n.inputs[0]) / k[0], k[0], k[1]};
      const DeviceWorkspace ws = workspace(lt.workspace_bytes(DenseCall::BackwardKernel, s, n.layer));
      lt.backward_kernel(s, o.inputs[0], o.inputs[1], o.outputs[0], ws, n.layer);
      break;
    }
    default: return false;
  }
  ++dense_calls_;
  return true;
}

}  // namespace pipec::gpu

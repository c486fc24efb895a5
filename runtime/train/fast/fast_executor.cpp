#include "runtime/train/fast/fast_executor.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/core/half.h"
#include "runtime/model/bf16_storage.h"
#include "runtime/train/dnnl/batch_norm.h"
#include "runtime/train/dnnl/conv2d.h"
#include "runtime/train/dnnl/conv2d_transpose.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/dnnl/dense.h"
#include "runtime/train/dnnl/eltwise.h"
#include "runtime/train/dnnl/layer_norm.h"
#include "runtime/train/dnnl/pool2d.h"
#include "runtime/train/dnnl/softmax.h"
#include "runtime/train/dnnl/upsample2d.h"
#include "runtime/train/math/round_16bit.h"

namespace pipec {

namespace {

// A layer with weights and the backward nodes the gradient pass made for it: backward-data (may be
// absent: the first layer needs no input gradient), backward-weights and the bias gradient, all reading
// the same dy. They run as one kernel call, at the first of them in the schedule.
struct WeightedGroup {
  int forward = -1, backward_input = -1, backward_kernel = -1, bias_backward = -1;
  int first = -1;  // the group's node that comes first in the schedule
};

train::Padding padding_of(Padding p) {
  switch (p) {
    case Padding::Valid: return train::Padding::Valid;
    case Padding::Same: return train::Padding::Same;
  }
  throw std::logic_error("fast executor: a padding without a oneDNN form");
}

// The activation a step pass fused into a layer (compiler/train/passes/fuse_activation.cpp).
train::Activation activation_of(const std::optional<Activation>& a) {
  if (!a) return train::Activation::none();
  switch (*a) {
    case Activation::Relu: return train::Activation::relu();
  }
  throw std::logic_error("fast executor: a fused activation without a oneDNN form");
}

bool weighted(ModelOp op) { return op == ModelOp::Conv2d || op == ModelOp::Conv2dTranspose || op == ModelOp::Dense; }

// Which part of a weighted layer's backward group a backward node is.
enum class GroupPart { None, Input, Kernel, Bias };

GroupPart group_part(ModelOp op) {
  switch (op) {
    case ModelOp::Conv2dBackwardInput:
    case ModelOp::Conv2dTransposeBackwardInput:
    case ModelOp::DenseBackwardInput: return GroupPart::Input;
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::Conv2dTransposeBackwardKernel:
    case ModelOp::DenseBackwardKernel: return GroupPart::Kernel;
    case ModelOp::BiasBackward: return GroupPart::Bias;
    default: return GroupPart::None;
  }
}

}  // namespace

// The claim. An exhaustive switch: a kind added to model_ops.def does not compile until it is decided
// here, and a kind claimed here must have its kernel in run_node (model_op_coverage_test runs each).
FastKernel fast_kernel_of(ModelOp op) {
  switch (op) {
    case ModelOp::Conv2d:
    case ModelOp::Conv2dTranspose:
    case ModelOp::Dense:
    case ModelOp::MaxPool2d:
    case ModelOp::AvgPool2d:
    case ModelOp::AvgPool2dBackward:
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalAvgPoolBackward:
    case ModelOp::GlobalMaxPool:
    case ModelOp::BatchNorm:
    case ModelOp::LayerNorm:
    case ModelOp::LayerNormBackward:
    case ModelOp::Upsample2d:
    case ModelOp::Upsample2dBackward:
    case ModelOp::Softmax:
    case ModelOp::SoftmaxBackward:
    case ModelOp::LeakyRelu:
    case ModelOp::LeakyReluBackward:
    case ModelOp::Gelu:
    case ModelOp::GeluBackward: return FastKernel::OneDnn;
    case ModelOp::Conv2dBackwardInput:
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::Conv2dTransposeBackwardInput:
    case ModelOp::Conv2dTransposeBackwardKernel:
    case ModelOp::DenseBackwardInput:
    case ModelOp::DenseBackwardKernel:
    case ModelOp::BiasBackward:
    case ModelOp::MaxPool2dBackward:
    case ModelOp::GlobalMaxPoolBackward:
    case ModelOp::BatchNormBackward: return FastKernel::WithForward;
    case ModelOp::Expr:
    case ModelOp::OptimizerStep: return FastKernel::Jit;
    case ModelOp::Dropout:
    case ModelOp::DropoutBackward:
    case ModelOp::Loss:
    case ModelOp::LossBackward:
    case ModelOp::MovingAverage:
    case ModelOp::Round:
    case ModelOp::Embedding:  // a row copy and a scatter-add: the reference's loops, split over the threads
    case ModelOp::EmbeddingBackward: return FastKernel::Reference;
  }
  throw std::logic_error("fast executor: a node kind outside model_ops.def");
}

// The kernel ops of one node for one batch size.
struct FastExecutor::NodeOps {
  std::unique_ptr<train::Conv2dOp> conv;
  std::unique_ptr<train::Conv2dTransposeOp> conv_transpose;
  std::unique_ptr<train::DenseOp> dense;
  std::unique_ptr<train::Pool2dOp> pool;
  std::unique_ptr<train::BatchNormOp> batch_norm;
  std::unique_ptr<train::LayerNormOp> layer_norm;
  std::unique_ptr<train::Upsample2dOp> upsample;
  std::unique_ptr<train::SoftmaxOp> softmax;
  std::unique_ptr<train::EltwiseOp> eltwise;
};

std::optional<CpuBf16> parse_cpu_bf16(std::string_view text) {
  if (text == "auto") return CpuBf16::Auto;
  if (text == "native") return CpuBf16::Native;
  if (text == "emulated") return CpuBf16::Emulated;
  return std::nullopt;
}

namespace {

bool use_bf16_kernels(const ModelGraph& g, CpuBf16 choice) {
  if (g.precision != Precision::MixedBf16) return false;
  return choice == CpuBf16::Native || (choice == CpuBf16::Auto && train::CpuKernels::native_bf16());
}

}  // namespace

struct FastExecutor::Kernels {
  Kernels(const FastExecutorOptions& o, bool bf16)
      : cpu(train::CpuKernelOptions{o.threads, train::ActivationLayout::Nhwc,
                                    o.direct_conv ? train::ConvAlgorithm::Direct : train::ConvAlgorithm::Auto, bf16,
                                    o.winograd_differs_for_testing}) {}

  train::CpuKernels cpu;
  std::vector<WeightedGroup> groups;
  std::vector<int> group_of;    // per node: its weighted group, or -1
  std::vector<int> forward_of;  // per backward node of a pool or batch_norm: the forward whose op it reuses
  std::map<int64_t, std::vector<NodeOps>> ops;  // by rows, per node
  int kernel_nodes = 0;
  int jit_nodes = 0;  // expr nodes with a compiled kernel
  int64_t expr_kernel_runs = 0, expr_fallbacks = 0;
  std::vector<bool> on_kernel;             // per node: oneDNN or a compiled kernel
  std::map<ModelOp, int64_t> kernel_runs;  // per kind: runs on oneDNN or compiled code
  // On bf16 kernels (leave_rounds_to_bf16_layers): per round node, whether the layers reading its
  // output round it themselves; per value, the value its readers read instead (-1: itself).
  std::vector<bool> left_to_layers;
  std::vector<int> operand_alias;
  int rounds_left_to_layers = 0;
  // On bf16 kernels (plan_bf16_values): per value, stored as bf16; per node, run on its expr kernel's
  // bf16 variant. Empty when every value is f32.
  std::vector<bool> bf16;
  std::vector<bool> bf16_kernel;
  int bf16_values = 0;
  int serial_ops = 0;  // ops made on one thread (FastExecutorOptions::serial_below_flops)
};

FastExecutor::FastExecutor(const ModelGraph& g, uint64_t seed, FastExecutorOptions options)
    : g_(g),
      state_(g, seed, "fast executor"),
      options_(options),
      kernels_(std::make_unique<Kernels>(options, use_bf16_kernels(g, options.cpu_bf16))) {
  Kernels& k = *kernels_;
  std::vector<int>& last_use = state_.last_uses();
  std::vector<int>& first_write = state_.first_writes();
  const int n = static_cast<int>(g.nodes.size());
  k.group_of.assign(n, -1);
  k.forward_of.assign(n, -1);
  // The gradient pass links every backward node to its forward node (GraphNode::forward): a weighted
  // layer's backward-data, backward-weights and bias gradient nodes form its group; the other kinds
  // claimed WithForward reuse their forward's op.
  std::vector<int> group_at(n, -1);  // per forward node: its group
  for (int b = 0; b < n; ++b) {
    const GraphNode& bw = g.nodes[b];
    const int f = bw.forward;
    if (f < 0 || fast_kernel_of(bw.op) != FastKernel::WithForward) continue;
    if (group_part(bw.op) != GroupPart::None) {
      if (!weighted(g.nodes[f].op)) continue;
      if (group_at[f] < 0) {
        group_at[f] = static_cast<int>(k.groups.size());
        k.groups.push_back(WeightedGroup{f});
      }
      WeightedGroup& grp = k.groups[group_at[f]];
      switch (group_part(bw.op)) {
        case GroupPart::Input: grp.backward_input = b; break;
        case GroupPart::Kernel: grp.backward_kernel = b; break;
        case GroupPart::Bias: grp.bias_backward = b; break;
        case GroupPart::None: break;
      }
    } else {
      k.forward_of[b] = f;
    }
  }
  // A group without a weight gradient is no group: its backward nodes run on their own.
  std::erase_if(k.groups, [](const WeightedGroup& grp) { return grp.backward_kernel < 0; });
  for (size_t id = 0; id < k.groups.size(); ++id) {
    WeightedGroup& grp = k.groups[id];
    const GraphNode& fw = g.nodes[grp.forward];
    grp.first = grp.backward_kernel;
    for (int b : {grp.backward_input, grp.bias_backward})
      if (b >= 0 && b < grp.first) grp.first = b;
    // The group's kernel call reads the kernel again; under mixed precision that is a rounded copy,
    // which lives only until its last reader in the graph: keep it until the call.
    last_use[fw.inputs[1]] = std::max(last_use[fw.inputs[1]], grp.first);
    for (int b : {grp.backward_input, grp.backward_kernel, grp.bias_backward})
      if (b >= 0) {
        k.group_of[b] = static_cast<int>(id);
        // The group's call writes every output of its nodes at the first of them: their places in
        // the arena are taken from then on.
        for (int o : g.nodes[b].outputs) first_write[o] = std::min(first_write[o], grp.first);
      }
  }
  if (k.cpu.options().bf16) leave_rounds_to_bf16_layers();
  if (k.cpu.options().bf16 && options_.bf16_storage) plan_bf16_values();
  for (int i = 0; i < n; ++i) {
    ModelOp op = g.nodes[i].op;
    const FastKernel how = fast_kernel_of(op);
    bool on_kernel = how == FastKernel::OneDnn || k.group_of[i] >= 0 || k.forward_of[i] >= 0;
    k.kernel_nodes += on_kernel;
    // Expr nodes and the optimizer's update with a compiled kernel run generated code.
    const bool jit = how == FastKernel::Jit && g.nodes[i].native;
    k.on_kernel.push_back(on_kernel || jit);
    k.jit_nodes += jit;
  }
}

// On bf16 kernels a layer converts each operand it reads (x, the kernel, dy) to bf16 itself, to nearest
// even as a round node does (and a value already rounded converts exactly): a round node whose every
// reader reads its output as such an operand computes nothing the layers would not, and is not run;
// its readers read its input instead, which lives as long as they need it. What can be left so: the
// model's inputs and the kernels conv2d and dense read, and the gradients their backward groups read as
// dy; not a bias (the layers add it in f32), nor a value an element-wise node also reads. The values are
// bit for bit those of the round nodes (MixedPrecision.FastExecutorRoundsLikeTheReferenceOnItsThreads).
void FastExecutor::leave_rounds_to_bf16_layers() {
  Kernels& k = *kernels_;
  const int n = static_cast<int>(g_.nodes.size());
  std::vector<int>& last_use = state_.last_uses();
  // Per value: whether every node reading it reads it as a bf16 operand of a layer on oneDNN.
  std::vector<bool> operand_only(g_.values.size(), true);
  // Not conv2d_transpose's: where its windows leave output rows unreached, its op adds the dy there to
  // the bias gradient in f32 itself.
  auto converts_all = [](ModelOp op) { return op == ModelOp::Conv2d || op == ModelOp::Dense; };
  for (int i = 0; i < n; ++i) {
    const GraphNode& nd = g_.nodes[i];
    // The values the layer's kernel calls read in bf16: a forward's x and kernel (not its bias, added in
    // f32), and for a node of a backward group, the group's x, kernel and dy.
    std::vector<int> bf16_operands;
    if (converts_all(nd.op)) {
      bf16_operands = {nd.inputs[0], nd.inputs[1]};
    } else if (k.group_of[i] >= 0 && converts_all(g_.nodes[k.groups[k.group_of[i]].forward].op)) {
      const WeightedGroup& grp = k.groups[k.group_of[i]];
      const GraphNode& fw = g_.nodes[grp.forward];
      bf16_operands = {fw.inputs[0], fw.inputs[1], g_.nodes[grp.backward_kernel].inputs[1]};
    }
    for (int v : nd.inputs)
      if (std::find(bf16_operands.begin(), bf16_operands.end(), v) == bf16_operands.end()) operand_only[v] = false;
  }
  k.operand_alias.assign(g_.values.size(), -1);
  k.left_to_layers.assign(n, false);
  for (int i = 0; i < n; ++i) {
    const GraphNode& nd = g_.nodes[i];
    if (nd.op != ModelOp::Round || nd.attrs_as<RoundAttrs>().dtype != Float16::BF16) continue;
    const int x = nd.inputs[0], y = nd.outputs[0];
    if (!operand_only[y] || last_use[y] < 0 || y == g_.output || y == g_.loss) continue;
    const ValueRole role = g_.values[y].role;
    if (role == ValueRole::Param || role == ValueRole::State || g_.values[y].grad_of >= 0) continue;
    k.operand_alias[y] = x;
    k.left_to_layers[i] = true;
    ++k.rounds_left_to_layers;
    last_use[x] = std::max(last_use[x], last_use[y]);
  }
}

// On bf16 kernels, the values runtime/model/bf16_storage.h picks are stored as bf16: decided once, here,
// as the JIT decided which expr kernels get a bf16 variant. Every node touching one must handle it: the
// round node writing it runs here (not left to the layers), a layer reads it as conv2d's or dense's x or
// as its backward group's x or dy, and an expr node has the variant for exactly this set of values.
// If one cannot (an expr kernel without a variant, a backward node outside a group), none is stored
// so: the f32 buffers, as without FastExecutorOptions::bf16_storage. The stored bits are the bf16 values
// the f32 buffers would hold, so the step computes the same (MixedPrecision.Bf16StorageTrainsBitForBit).
void FastExecutor::plan_bf16_values() {
  Kernels& k = *kernels_;
  const int n = static_cast<int>(g_.nodes.size());
  std::vector<bool> bf16 = plan_bf16_storage(g_);
  std::vector<bool> variant(n, false);
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) {
    const GraphNode& nd = g_.nodes[i];
    bool touches = false;
    for (int v : nd.inputs) touches = touches || bf16[v];
    for (int v : nd.outputs) touches = touches || bf16[v];
    if (!touches) continue;
    switch (nd.op) {
      case ModelOp::Round: ok = !k.left_to_layers[i]; break;
      case ModelOp::Expr: {
        const NativeKernel* v = nd.native ? nd.native->bf16_storage.get() : nullptr;
        ok = v != nullptr && v->bf16_inputs.size() == nd.native->input_fields.size() &&
             v->bf16_outputs.size() == nd.outputs.size();
        for (size_t j = 0; ok && j < v->bf16_inputs.size(); ++j)
          ok = v->bf16_inputs[j] == bf16[nd.inputs.at(static_cast<size_t>(nd.native->input_fields[j]))];
        for (size_t j = 0; ok && j < v->bf16_outputs.size(); ++j) ok = v->bf16_outputs[j] == bf16[nd.outputs[j]];
        variant[i] = ok;
        break;
      }
      case ModelOp::Conv2d:
      case ModelOp::Dense: ok = !bf16[nd.inputs[1]] && !bf16[nd.inputs[2]]; break;  // x only
      default: {
        // A backward node: its group's call reads the value as the layer's x or dy.
        if (k.group_of[i] < 0) {
          ok = false;
          break;
        }
        const WeightedGroup& grp = k.groups[k.group_of[i]];
        const GraphNode& fw = g_.nodes[grp.forward];
        ok = fw.op == ModelOp::Conv2d || fw.op == ModelOp::Dense;
        for (int v : nd.inputs)
          if (bf16[v] && v != fw.inputs[0] && v != g_.nodes[grp.backward_kernel].inputs[1]) ok = false;
        for (int v : nd.outputs)
          if (bf16[v]) ok = false;
      }
    }
  }
  if (!ok) return;
  k.bf16 = std::move(bf16);
  k.bf16_kernel = std::move(variant);
  k.bf16_values = static_cast<int>(std::count(k.bf16.begin(), k.bf16.end(), true));
  state_.set_bf16_values(k.bf16);  // their places in the arena: 2 bytes an element
}

bool FastExecutor::stored_bf16(int id) const {
  const std::vector<bool>& bf16 = kernels_->bf16;
  return !bf16.empty() && bf16[static_cast<size_t>(id)];
}

FastExecutor::~FastExecutor() = default;

float* FastExecutor::data(int id) {
  // A value stored as bf16: its bits, behind the `float*` the layers and loops pass around.
  if (stored_bf16(id)) {
    Tensor& t = state_.value(id);
    if (!t.defined()) throw std::logic_error(fmt::format("fast executor: %{} is read before it is computed", id));
    return reinterpret_cast<float*>(t.raw());
  }
  const std::vector<int>& alias = kernels_->operand_alias;
  return state_.data(alias.empty() || alias[id] < 0 ? id : alias[id]);
}

Tensor FastExecutor::host_value(int id) {
  if (stored_bf16(id)) {  // its bf16 bits, widened
    const Tensor& held = state_.value(id);
    if (!held.defined()) return held;
    Tensor out = Tensor::empty(DType::F32, held.shape());
    const auto* bits = reinterpret_cast<const uint16_t*>(held.raw());
    for (int64_t i = 0; i < out.num_elements(); ++i) out.data<float>()[i] = bf16_bits_to_float(bits[i]);
    return out;
  }
  const std::vector<int>& alias = kernels_->operand_alias;
  if (alias.empty() || alias[id] < 0) return state_.value(id);
  const int x = alias[id];
  // The input as a tensor: a parameter's view of the flat buffer, or the step's value.
  Tensor in = state_.value(x);
  if (!in.defined() && g_.values[x].role == ValueRole::Param) {
    in = Tensor::empty(DType::F32, g_.values[x].shape);
    std::copy_n(state_.data(x), in.num_elements(), in.data<float>());
  }
  if (!in.defined()) return in;
  Tensor out = Tensor::empty(DType::F32, in.shape());
  round_to_bf16(in.data<float>(), out.data<float>(), in.num_elements());
  return out;
}

int FastExecutor::kernel_nodes() const { return kernels_->kernel_nodes; }
int FastExecutor::rounds_left_to_layers() const { return kernels_->rounds_left_to_layers; }
int FastExecutor::bf16_values() const { return kernels_->bf16_values; }
int FastExecutor::serial_ops() const { return kernels_->serial_ops; }
bool FastExecutor::bf16_kernels() const { return kernels_->cpu.options().bf16; }
int64_t FastExecutor::kernel_runs(ModelOp op) const {
  auto it = kernels_->kernel_runs.find(op);
  return it == kernels_->kernel_runs.end() ? 0 : it->second;
}
int64_t FastExecutor::expr_kernel_runs() const { return kernels_->expr_kernel_runs; }
int64_t FastExecutor::expr_fallbacks() const { return kernels_->expr_fallbacks; }

std::vector<std::string> FastExecutor::reference_ops() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const std::string name = model_op_name(g_.nodes[i].op);
    if (!kernels_->on_kernel[i] && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

std::string FastExecutor::description() const {
  // The OpenMP wait policy libgomp loaded with (the driver makes it passive for `pipec run`).
  const char* waits = std::getenv("OMP_WAIT_POLICY");
  // Which algorithm the conv2d layers got, once a step has made their ops (the full batch's).
  std::string conv;
  if (!kernels_->ops.empty()) {
    int convs = 0, winograd = 0, refused = 0;
    for (const NodeOps& o : kernels_->ops.rbegin()->second)
      if (o.conv) ++convs, winograd += o.conv->winograd(), refused += o.conv->winograd_refused();
    if (convs > 0)
      conv = winograd == convs ? ", conv2d by Winograd (--conv direct for the direct algorithm)"
             : winograd > 0    ? fmt::format(", {} of {} conv2d layers by Winograd", winograd, convs)
                               : ", conv2d direct";
    if (refused > 0)
      conv += fmt::format(
          " ({} conv2d layer{} direct because oneDNN's Winograd gave two different results for one "
          "input on this CPU)",
          refused, refused == 1 ? "" : "s");
  }
  // Under mixed_bf16: which kernels the layers multiply on, and why.
  std::string bf16;
  if (g_.precision == Precision::MixedBf16) {
    if (bf16_kernels())
      bf16 = fmt::format(
          ", mixed_bf16 layers on bf16 kernels{} ({} round nodes left to the layers, {} values stored in bf16; {})",
          train::CpuKernels::native_bf16() ? "" : " without bf16 instructions", kernels_->rounds_left_to_layers,
          kernels_->bf16_values,
          train::CpuKernels::native_bf16() ? "--cpu-bf16 emulated for f32 ones" : "--cpu-bf16 native: slow");
    else
      bf16 = options_.cpu_bf16 == CpuBf16::Emulated
                 ? ", mixed_bf16 emulated on f32 kernels (--cpu-bf16 emulated)"
                 : ", mixed_bf16 emulated on f32 kernels: this CPU has no bf16 instructions";
  }
  return fmt::format(
      "fast ({} of {} nodes on oneDNN {} {}, {} compiled by the JIT, {} thread{}{}{}, OpenMP waits {}; -O0 or "
      "--executor reference for the reference)",
      kernels_->kernel_nodes, g_.nodes.size(), train::CpuKernels::version(), train::CpuKernels::isa(),
      kernels_->jit_nodes, kernels_->cpu.threads(), kernels_->cpu.threads() == 1 ? "" : "s", conv, bf16,
      waits ? waits : "active (the default)");
}

double FastExecutor::run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
                         PhaseSeconds* seconds) {
  return state_.run(inputs, target, step, last, seconds, node_runner());
}

double FastExecutor::resume(uint64_t step, OpCategory last, PhaseSeconds* seconds) {
  return state_.resume(step, last, seconds, node_runner());
}

ReferenceLoops FastExecutor::reference_loops() const {
  return ReferenceLoops{train::parallel_for(kernels_->cpu.threads()), true};
}

StepState<float>::NodeRunner FastExecutor::node_runner() {
  return [this](const GraphNode& n, int64_t rows, uint64_t step) { run_node(n, rows, step); };
}

// An expr node's compiled kernel (GraphNode::native), the batch as rows: every input a dense f32
// value of the node's per-example size, every output allocated as the reference allocates it. False
// (nothing done) when a value is not such a tensor: the interpreter then runs the node.
bool FastExecutor::run_expr_kernel(const GraphNode& n, int64_t rows) {
  const int index = static_cast<int>(&n - g_.nodes.data());
  const bool variant = !kernels_->bf16_kernel.empty() && kernels_->bf16_kernel[static_cast<size_t>(index)];
  // On its bf16 variant the kernel reads and writes the values stored as bf16 as 2 bytes each.
  const NativeKernel& k = variant ? *n.native->bf16_storage : *n.native;
  // The interpreter reads f32 values only: a node touching bf16 ones cannot fall back to it.
  auto fall_back = [&]() -> bool {
    if (variant)
      throw std::logic_error(
          fmt::format("fast executor: node {} reads or writes bf16 values, and its values are not "
                      "those its kernel was compiled for",
                      index));
    return false;
  };
  // Each value's bytes per row, for the parts below; false when one is not the dense f32 tensor the
  // kernel was compiled for.
  auto row_bytes = [&](int id, int64_t& bytes) {
    const Tensor& t = state_.value(id);
    const int64_t n = shape_num_elements(g_.full_shape(id, rows));
    bytes = n / rows * static_cast<int64_t>(stored_bf16(id) ? sizeof(uint16_t) : sizeof(float));
    return t.dtype() == (stored_bf16(id) ? DType::BF16 : DType::F32) && t.num_elements() == n;
  };
  std::vector<const void*> inputs;
  std::vector<int64_t> in_row;
  for (int fi : k.input_fields) {
    if (fi < 0 || static_cast<size_t>(fi) >= n.inputs.size()) return fall_back();
    const int id = n.inputs[static_cast<size_t>(fi)];
    if (!row_bytes(id, in_row.emplace_back())) return fall_back();
    inputs.push_back(state_.value(id).raw());
  }
  // The outputs get their places in the arena here: allocate_outputs leaves an expr node's outputs to
  // the interpreter's path.
  std::vector<void*> outputs;
  std::vector<int64_t> out_row;
  for (int id : n.outputs) {
    const GraphValue& v = g_.values[static_cast<size_t>(id)];
    if (v.dtype != DType::F32 || v.grad_of >= 0 || v.role == ValueRole::Param || v.role == ValueRole::State)
      return fall_back();
    state_.value(id) = state_.arena_tensor(id, rows);
    if (!row_bytes(id, out_row.emplace_back())) return fall_back();
    outputs.push_back(data(id));
  }
  // The rows in parallel, a contiguous part per thread: a row's values depend on that row alone, so
  // the parts give what one call would, bit for bit.
  std::atomic<bool> ok{true};
  train::parallel_rows(kernels_->cpu.threads(), rows, [&](int64_t begin, int64_t end) {
    std::vector<const void*> in(inputs.size());
    std::vector<void*> out(outputs.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<const uint8_t*>(inputs[i]) + begin * in_row[i];
    for (size_t j = 0; j < out.size(); ++j) out[j] = static_cast<uint8_t*>(outputs[j]) + begin * out_row[j];
    PipecKernelArgs args{in.data(), out.data(), end - begin, begin, 0, state_.seed()};
    if (k.fn(&args) != 0) ok = false;
  });
  // A variant has no checks that could fail (the JIT makes none for a kernel with checks), and the
  // interpreter could not read its bf16 values.
  if (!ok && variant) throw std::logic_error("fast executor: an expr kernel's bf16 variant failed");
  return ok;
}

// The kernel ops of node `f` for batches of `rows`, made on first use: a weighted layer's for its
// forward node (its backward group runs on them), a pool's, norm's or softmax's for the node that runs
// it (a max pool's and a batch_norm's backward reuse their forward's).
FastExecutor::NodeOps& FastExecutor::node_ops(int f, int64_t rows) {
  Kernels& k = *kernels_;
  std::vector<NodeOps>& per_node = k.ops[rows];
  if (per_node.empty()) per_node.resize(g_.nodes.size());
  NodeOps& o = per_node[static_cast<size_t>(f)];
  const GraphNode& nd = g_.nodes[static_cast<size_t>(f)];
  // An op keeps the thread count it is made with (CpuKernels::set_threads): one for a small layer.
  const bool made = o.conv || o.conv_transpose || o.dense || o.pool || o.batch_norm || o.layer_norm || o.upsample ||
                    o.softmax || o.eltwise;
  const int threads = k.cpu.options().threads;
  const bool serial =
      !made && options_.serial_below_flops > 0 && node_flops(g_, nd, rows) < options_.serial_below_flops;
  if (serial) {
    k.cpu.set_threads(1);
    ++k.serial_ops;
  }
  struct Restore {
    train::CpuKernels& cpu;
    int threads;
    bool on;
    ~Restore() {
      if (on) cpu.set_threads(threads);
    }
  } restore{k.cpu, threads, serial};
  auto shape = [&](int id) -> const Shape& { return g_.values[id].shape; };
  auto count = [&](int id) { return shape_num_elements(g_.full_shape(id, rows)); };
  // Whether the backward group of layer `f` reads its dy stored as bf16.
  auto bf16_dy = [&](int f) {
    for (const WeightedGroup& grp : k.groups)
      if (grp.forward == f) return stored_bf16(g_.nodes[grp.backward_kernel].inputs[1]);
    return false;
  };
  switch (nd.op) {
    case ModelOp::Dense: {
      if (o.dense) break;
      const Shape& w = shape(nd.inputs[1]);
      train::DenseDesc d;
      d.in = w[0], d.out = w[1];
      d.rows = count(nd.inputs[0]) / d.in;
      d.activation = activation_of(nd.attrs_as<DenseAttrs>().activation);
      d.bf16_x = stored_bf16(nd.inputs[0]);
      d.bf16_dy = bf16_dy(f);
      o.dense = std::make_unique<train::DenseOp>(k.cpu, d);
      break;
    }
    case ModelOp::Conv2d: {
      if (o.conv) break;
      const Shape& x = shape(nd.inputs[0]);
      const Shape& w = shape(nd.inputs[1]);
      const Shape& y = shape(nd.outputs[0]);
      train::Conv2dDesc d;
      d.batch = rows, d.height = x[0], d.width = x[1], d.in_channels = x[2];
      const Conv2dAttrs& a = nd.attrs_as<Conv2dAttrs>();
      d.kernel_h = w[0], d.kernel_w = w[1], d.filters = w[3];
      d.stride_h = a.strides[0], d.stride_w = a.strides[1];
      d.dilation_h = a.dilation[0], d.dilation_w = a.dilation[1];
      d.padding = padding_of(a.padding);
      d.activation = activation_of(a.activation);
      d.bf16_x = stored_bf16(nd.inputs[0]);
      d.bf16_dy = bf16_dy(f);
      o.conv = std::make_unique<train::Conv2dOp>(k.cpu, d);
      if (o.conv->out_h() != y[0] || o.conv->out_w() != y[1])
        throw std::logic_error(fmt::format("fast executor: {} gives {}x{}, the graph says {}", d.to_string(),
                                           o.conv->out_h(), o.conv->out_w(), shape_to_string(y)));
      break;
    }
    case ModelOp::Conv2dTranspose: {
      if (o.conv_transpose) break;
      const Shape& x = shape(nd.inputs[0]);
      const Shape& w = shape(nd.inputs[1]);
      const Shape& y = shape(nd.outputs[0]);
      train::Conv2dTransposeDesc d;
      d.batch = rows, d.height = x[0], d.width = x[1], d.in_channels = x[2];
      const Conv2dTransposeAttrs& a = nd.attrs_as<Conv2dTransposeAttrs>();
      d.kernel_h = w[0], d.kernel_w = w[1], d.filters = w[2];
      d.stride_h = a.strides[0], d.stride_w = a.strides[1];
      d.padding = padding_of(a.padding);
      d.activation = activation_of(a.activation);
      o.conv_transpose = std::make_unique<train::Conv2dTransposeOp>(k.cpu, d);
      if (o.conv_transpose->out_h() != y[0] || o.conv_transpose->out_w() != y[1])
        throw std::logic_error(fmt::format("fast executor: {} gives {}x{}, the graph says {}", d.to_string(),
                                           o.conv_transpose->out_h(), o.conv_transpose->out_w(), shape_to_string(y)));
      break;
    }
    // A window pool from its attributes, a global one (global_*_pool and their backward) a window of
    // the whole image; `x` is the pool's input shape per example.
    case ModelOp::MaxPool2d:
    case ModelOp::AvgPool2d:
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalMaxPool:
    case ModelOp::AvgPool2dBackward:
    case ModelOp::GlobalAvgPoolBackward: {
      if (o.pool) break;
      const bool backward_node = nd.op == ModelOp::AvgPool2dBackward || nd.op == ModelOp::GlobalAvgPoolBackward;
      const Shape& x = shape(backward_node ? nd.outputs[0] : nd.inputs[0]);
      train::Pool2dDesc d;
      d.batch = rows, d.height = x[0], d.width = x[1], d.channels = x[2];
      d.kind =
          nd.op == ModelOp::MaxPool2d || nd.op == ModelOp::GlobalMaxPool ? train::PoolKind::Max : train::PoolKind::Avg;
      if (nd.op == ModelOp::GlobalAvgPool || nd.op == ModelOp::GlobalMaxPool ||
          nd.op == ModelOp::GlobalAvgPoolBackward) {
        d.size_h = x[0], d.size_w = x[1];
      } else {
        const Pool2dAttrs& a = nd.attrs_as<Pool2dAttrs>();
        d.size_h = a.size[0], d.size_w = a.size[1], d.stride_h = a.strides[0], d.stride_w = a.strides[1];
        d.padding = padding_of(a.padding);
      }
      o.pool = std::make_unique<train::Pool2dOp>(k.cpu, d);
      break;
    }
    case ModelOp::Upsample2d:
    case ModelOp::Upsample2dBackward: {
      if (o.upsample) break;
      const bool backward_node = nd.op == ModelOp::Upsample2dBackward;
      const Shape& x = shape(backward_node ? nd.outputs[0] : nd.inputs[0]);
      const Shape& y = shape(backward_node ? nd.inputs[0] : nd.outputs[0]);
      train::Upsample2dDesc d;
      d.batch = rows, d.height = x[0], d.width = x[1], d.channels = x[2], d.out_h = y[0], d.out_w = y[1];
      d.bilinear = nd.attrs_as<Upsample2dAttrs>().method == Interpolation::Bilinear;
      o.upsample = std::make_unique<train::Upsample2dOp>(k.cpu, d);
      break;
    }
    case ModelOp::Softmax:
    case ModelOp::SoftmaxBackward: {
      if (o.softmax) break;
      const Shape full = g_.full_shape(nd.inputs[0], rows);
      const size_t axis = static_cast<size_t>(nd.attrs_as<SoftmaxAttrs>().axis) + 1;
      train::SoftmaxDesc d;
      d.outer = 1, d.inner = 1;
      for (size_t i = 0; i < axis; ++i) d.outer *= full[i];
      d.len = full.at(axis);
      for (size_t i = axis + 1; i < full.size(); ++i) d.inner *= full[i];
      o.softmax = std::make_unique<train::SoftmaxOp>(k.cpu, d);
      break;
    }
    case ModelOp::LayerNorm:
    case ModelOp::LayerNormBackward: {
      if (o.layer_norm) break;
      train::LayerNormDesc d;
      d.features = shape(nd.inputs[0]).back();
      d.rows = count(nd.inputs[0]) / d.features;
      d.epsilon = static_cast<float>(nd.attrs_as<LayerNormAttrs>().epsilon);
      o.layer_norm = std::make_unique<train::LayerNormOp>(k.cpu, d);
      break;
    }
    case ModelOp::BatchNorm: {
      if (o.batch_norm) break;
      train::BatchNormDesc d;
      d.channels = shape(nd.inputs[0]).back();
      d.batch = count(nd.inputs[0]) / d.channels;
      const BatchNormAttrs& a = nd.attrs_as<BatchNormAttrs>();
      d.epsilon = static_cast<float>(a.epsilon);
      d.momentum = static_cast<float>(a.momentum);
      o.batch_norm = std::make_unique<train::BatchNormOp>(k.cpu, d);
      break;
    }
    case ModelOp::LeakyRelu:
    case ModelOp::LeakyReluBackward:
    case ModelOp::Gelu:
    case ModelOp::GeluBackward: {
      if (o.eltwise) break;
      const bool leaky = nd.op == ModelOp::LeakyRelu || nd.op == ModelOp::LeakyReluBackward;
      const train::Activation a =
          leaky ? train::Activation::leaky_relu(static_cast<float>(nd.attrs_as<LeakyReluAttrs>().alpha))
                : train::Activation::gelu();
      o.eltwise = std::make_unique<train::EltwiseOp>(k.cpu, train::EltwiseDesc{a, count(nd.inputs[0])});
      break;
    }
    default: break;
  }
  return o;
}

// The node whose ops node `i` runs on: its weighted group's forward, the forward it reuses, or itself
// when it is claimed OneDnn; -1 for a node without ops.
int FastExecutor::ops_node(int i) const {
  const Kernels& k = *kernels_;
  if (k.group_of[i] >= 0) return k.groups[k.group_of[i]].forward;
  if (k.forward_of[i] >= 0) return k.forward_of[i];
  return fast_kernel_of(g_.nodes[i].op) == FastKernel::OneDnn ? i : -1;
}

std::optional<ExecutorMemory> FastExecutor::prepare_memory(int64_t rows) {
  train::KernelMemory kernels;
  std::vector<bool> counted(g_.nodes.size(), false);
  for (int i = 0; i < static_cast<int>(g_.nodes.size()); ++i) {
    const int f = ops_node(i);
    if (f < 0 || counted[f]) continue;
    counted[f] = true;
    const NodeOps& o = node_ops(f, rows);
    if (o.conv) kernels += o.conv->owned_memory();
    if (o.conv_transpose) kernels += o.conv_transpose->owned_memory();
    if (o.dense) kernels += o.dense->owned_memory();
    if (o.pool) kernels += o.pool->owned_memory();
    if (o.batch_norm) kernels += o.batch_norm->owned_memory();
    if (o.layer_norm) kernels += o.layer_norm->owned_memory();
  }
  // The shared buffers as the ops made so far (every batch size's) need them.
  kernels += kernels_->cpu.shared_memory();
  ExecutorMemory m;
  m.arena_bytes = plan_step_arena(g_, rows, first_writes(), last_uses(), state_.bf16_values()).bytes;
  m.kernels = {{"oneDNN scratchpad", kernels.scratchpad},
               {"staged activations", kernels.staging},
               {"reordered weights", kernels.weights},
               {"layers' own activations", kernels.activations},
               {"workspaces", kernels.workspaces}};
  return m;
}

void FastExecutor::run_node(const GraphNode& n, int64_t rows, uint64_t step) {
  Kernels& k = *kernels_;
  const int index = static_cast<int>(&n - g_.nodes.data());
  // A step starts at the first node: the weights may have changed since the last (the optimizer, or a
  // caller writing the buffers), so each op reorders them again, once; with constant weights, only
  // before the first step.
  if (index == 0 && (!options_.constant_weights || k.cpu.weights_generation() == 1)) k.cpu.weights_changed();
  if (!k.left_to_layers.empty() && k.left_to_layers[index]) return;  // the layers reading it round
  auto ptr = [&](int id) { return data(id); };
  auto shape = [&](int id) -> const Shape& { return g_.values[id].shape; };
  auto weighted_ops = [&](int f) -> NodeOps& { return node_ops(f, rows); };
  auto pool_op = [&](int f) -> train::Pool2dOp& { return *node_ops(f, rows).pool; };
  auto upsample_op = [&](int f) -> train::Upsample2dOp& { return *node_ops(f, rows).upsample; };
  auto softmax_op = [&](int f) -> train::SoftmaxOp& { return *node_ops(f, rows).softmax; };
  auto layer_norm_op = [&](int f) -> train::LayerNormOp& { return *node_ops(f, rows).layer_norm; };
  auto batch_norm_op = [&](int f) -> train::BatchNormOp& { return *node_ops(f, rows).batch_norm; };

  if (k.group_of[index] >= 0) {
    const WeightedGroup& grp = k.groups[k.group_of[index]];
    if (index != grp.first) return;  // computed with the group
    const GraphNode& fw = g_.nodes[grp.forward];
    const GraphNode& bk = g_.nodes[grp.backward_kernel];
    for (int b : {grp.backward_input, grp.backward_kernel, grp.bias_backward})
      if (b >= 0) allocate_outputs(g_.nodes[b], rows);
    const float* x = ptr(fw.inputs[0]);
    const float* w = ptr(fw.inputs[1]);
    const float* dy = ptr(bk.inputs[1]);
    float* dx = grp.backward_input >= 0 ? ptr(g_.nodes[grp.backward_input].outputs[0]) : nullptr;
    float* dw = ptr(bk.outputs[0]);
    // Without a bias gradient node the kernel still computes one: into a scratch buffer.
    std::vector<float> scratch;
    float* db = nullptr;
    if (grp.bias_backward >= 0) {
      db = ptr(g_.nodes[grp.bias_backward].outputs[0]);
    } else {
      scratch.resize(static_cast<size_t>(shape(fw.inputs[2]).at(0)));
      db = scratch.data();
    }
    NodeOps& o = weighted_ops(grp.forward);
    if (o.conv) o.conv->backward(x, w, dy, dx, dw, db);
    else if (o.dense) o.dense->backward(x, w, dy, dx, dw, db);
    else o.conv_transpose->backward(x, w, dy, dx, dw, db);
    for (int b : {grp.backward_input, grp.backward_kernel, grp.bias_backward})
      if (b >= 0) ++k.kernel_runs[g_.nodes[b].op];
    return;
  }
  if (k.forward_of[index] >= 0) {
    allocate_outputs(n, rows);
    const int f = k.forward_of[index];
    if (n.op == ModelOp::MaxPool2dBackward || n.op == ModelOp::GlobalMaxPoolBackward) {  // x, dy -> dx
      pool_op(f).backward(ptr(n.inputs[1]), ptr(n.outputs[0]));
    } else {  // BatchNormBackward: x, dy, gamma, mean, variance -> dx, dgamma, dbeta
      batch_norm_op(f).backward(ptr(n.inputs[0]), ptr(n.inputs[2]), ptr(n.inputs[1]), ptr(n.outputs[0]),
                                ptr(n.outputs[1]), ptr(n.outputs[2]));
    }
    ++k.kernel_runs[n.op];
    return;
  }
  // The kinds claimed OneDnn (and Jit) on their own kernels: each case breaks to be counted; the
  // others, and a Jit node without its compiled code, run on the reference's loops.
  switch (n.op) {
    case ModelOp::Conv2d:
    case ModelOp::Conv2dTranspose:
    case ModelOp::Dense: {
      allocate_outputs(n, rows);
      NodeOps& o = weighted_ops(index);
      const float *x = ptr(n.inputs[0]), *w = ptr(n.inputs[1]), *b = ptr(n.inputs[2]);
      float* y = ptr(n.outputs[0]);
      if (o.conv) o.conv->forward(x, w, b, y);
      else if (o.dense) o.dense->forward(x, w, b, y);
      else o.conv_transpose->forward(x, w, b, y);
      break;
    }
    case ModelOp::MaxPool2d:
    case ModelOp::AvgPool2d:
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalMaxPool:
      allocate_outputs(n, rows);
      pool_op(index).forward(ptr(n.inputs[0]), ptr(n.outputs[0]));
      break;
    case ModelOp::AvgPool2dBackward:
    case ModelOp::GlobalAvgPoolBackward:  // dy -> dx: an average needs nothing of its forward
      allocate_outputs(n, rows);
      pool_op(index).backward(ptr(n.inputs[0]), ptr(n.outputs[0]));
      break;
    case ModelOp::Upsample2d:
      allocate_outputs(n, rows);
      upsample_op(index).forward(ptr(n.inputs[0]), ptr(n.outputs[0]));
      break;
    case ModelOp::Upsample2dBackward:  // dy -> dx
      allocate_outputs(n, rows);
      upsample_op(index).backward(ptr(n.inputs[0]), ptr(n.outputs[0]));
      break;
    case ModelOp::Softmax:
      allocate_outputs(n, rows);
      softmax_op(index).forward(ptr(n.inputs[0]), ptr(n.outputs[0]));
      break;
    case ModelOp::SoftmaxBackward:  // y, dy -> dx
      allocate_outputs(n, rows);
      softmax_op(index).backward(ptr(n.inputs[0]), ptr(n.inputs[1]), ptr(n.outputs[0]));
      break;
    case ModelOp::LayerNorm:  // x, gamma, beta -> y, mean, variance
      allocate_outputs(n, rows);
      layer_norm_op(index).forward(ptr(n.inputs[0]), ptr(n.inputs[1]), ptr(n.inputs[2]), ptr(n.outputs[0]),
                                   ptr(n.outputs[1]), ptr(n.outputs[2]));
      break;
    case ModelOp::LayerNormBackward:  // x, dy, gamma, mean, variance -> dx, dgamma, dbeta
      allocate_outputs(n, rows);
      layer_norm_op(index).backward(ptr(n.inputs[0]), ptr(n.inputs[2]), ptr(n.inputs[1]), ptr(n.inputs[3]),
                                    ptr(n.inputs[4]), ptr(n.outputs[0]), ptr(n.outputs[1]), ptr(n.outputs[2]));
      break;
    case ModelOp::BatchNorm: {
      allocate_outputs(n, rows);
      // The moving statistics are the step's moving_average nodes' work: the kernel only normalizes and
      // hands the batch statistics to the graph's values.
      train::BatchNormOp& op = batch_norm_op(index);
      if (n.attrs_as<BatchNormAttrs>().inference) {
        // Keras' training=False: the moving statistics normalize, and are the statistics it reports.
        const int64_t c = shape(n.inputs[0]).back();
        op.forward_inference(ptr(n.inputs[0]), ptr(n.inputs[1]), ptr(n.inputs[2]), ptr(n.inputs[3]), ptr(n.inputs[4]),
                             ptr(n.outputs[0]));
        std::copy_n(ptr(n.inputs[3]), c, ptr(n.outputs[1]));
        std::copy_n(ptr(n.inputs[4]), c, ptr(n.outputs[2]));
        break;
      }
      op.forward_training(ptr(n.inputs[0]), ptr(n.inputs[1]), ptr(n.inputs[2]), ptr(n.outputs[0]), nullptr, nullptr);
      std::vector<float> mean = op.batch_mean(), variance = op.batch_variance();
      std::copy(mean.begin(), mean.end(), ptr(n.outputs[1]));
      std::copy(variance.begin(), variance.end(), ptr(n.outputs[2]));
      break;
    }
    case ModelOp::LeakyRelu:
    case ModelOp::LeakyReluBackward:
    case ModelOp::Gelu:
    case ModelOp::GeluBackward: {
      allocate_outputs(n, rows);
      train::EltwiseOp& op = *node_ops(index, rows).eltwise;
      if (n.op == ModelOp::LeakyRelu || n.op == ModelOp::Gelu) op.forward(ptr(n.inputs[0]), ptr(n.outputs[0]));
      else op.backward_from_input(ptr(n.inputs[0]), ptr(n.inputs[1]), ptr(n.outputs[0]));
      break;
    }
    case ModelOp::Expr:
      if (n.native) {
        if (run_expr_kernel(n, rows)) {
          ++k.expr_kernel_runs;
          break;
        }
        ++k.expr_fallbacks;
      }
      run_reference_node(state_, n, rows, step, reference_loops());
      return;
    case ModelOp::OptimizerStep:  // the reference's update with the compiled loop body (reference_loops)
      run_reference_node(state_, n, rows, step, reference_loops());
      if (!n.native) return;
      break;
    case ModelOp::Round:
      if (!stored_bf16(n.outputs[0])) {
        run_reference_node(state_, n, rows, step, reference_loops());
        return;
      }
      {  // into the bf16 value itself, split over the threads as the reference's loop
        allocate_outputs(n, rows);
        const float* x = ptr(n.inputs[0]);
        auto* y = reinterpret_cast<uint16_t*>(ptr(n.outputs[0]));
        const int64_t values = shape_num_elements(g_.full_shape(n.inputs[0], rows));
        train::parallel_rows(
            values < (int64_t(1) << 16) ? 1 : k.cpu.threads(), values,
            [&](int64_t begin, int64_t end) { round_to_bf16_bits(x + begin, y + begin, end - begin); });
      }
      return;
    default: run_reference_node(state_, n, rows, step, reference_loops()); return;
  }
  ++k.kernel_runs[n.op];
}

}  // namespace pipec

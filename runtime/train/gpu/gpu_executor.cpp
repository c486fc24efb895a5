#include "runtime/train/gpu/gpu_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/core/chunk.h"
#include "runtime/ops/interpreter.h"
#include "runtime/ops/kernel.h"
#include "runtime/train/gpu/gpu_kernel_claim.h"
#include "runtime/train/gpu/gpu_optimizer.h"
#include "runtime/train/gpu/library_nodes.h"
#include "runtime/train/gpu/node_kernels.h"
#include "runtime/train/math/initializers.h"

namespace pipec::gpu {

namespace {

std::string bytes_text(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GB", static_cast<double>(b) / (1 << 30));
  return fmt::format("{:.1f} MB", static_cast<double>(b) / (1 << 20));
}

}  // namespace

const char* node_ran_on_name(NodeRanOn r) {
  switch (r) {
    case NodeRanOn::NotRun: return "not run";
    case NodeRanOn::Cudnn: return "cuDNN";
    case NodeRanOn::CublasLt: return "cuBLASLt";
    case NodeRanOn::StepKernels: return "step kernels";
    case NodeRanOn::GeneratedKernel: return "generated kernel";
    case NodeRanOn::Host: return "host";
    case NodeRanOn::Optimizer: return "optimizer kernels";
  }
  return "?";
}

// The device side of the executor: every block it allocated, and what it knows per node.
struct GpuExecutor::Impl {
  DeviceBlock params, grads, states;
  DeviceBlock arena;
  std::map<int, DeviceBlock> fed;  // the batch: each input value and the target, by value id
  DeviceBlock scratch;             // partial sums of the reductions (node_scratch_bytes)
  DeviceBlock step_counter;        // the step as a device u64 (dropout reads it there)
  DevPtr loss_value = 0;           // the loss node's output, for mixed_fp16's finite check
  std::unique_ptr<GpuOptimizer> optimizer;
  std::unique_ptr<LibraryNodes> libraries;  // conv2d and dense on cuDNN and cuBLASLt where found
  // Per node index: whether an expr node runs its generated kernel (loaded on first use) or on the host.
  std::vector<int> expr_state;  // 0 not looked at yet, 1 device, 2 host
  std::vector<std::string> expr_why;
  std::map<ModelOp, int64_t> kernel_runs;  // per kind: node runs on the executor's own kernels
};

GpuExecutor::GpuExecutor(const ModelGraph& g, uint64_t seed, std::unique_ptr<StepDevice> device,
                         GpuExecutorOptions options)
    : g_(g), seed_(seed), device_(std::move(device)), options_(options), impl_(std::make_unique<Impl>()) {
  initialize_parameters<float>(g, seed, host_.params, host_.states);
  host_.grads.assign(host_.params.size(), 0.0f);
  Impl& d = *impl_;
  // At least one float each: a model without parameters (or states) still hands the optimizer's kernels
  // device addresses. The copies to and from the host move the host's sizes.
  auto floats = [](size_t n) { return std::max<size_t>(n, 1) * sizeof(float); };
  d.params = DeviceBlock(*device_, floats(host_.params.size()));
  d.grads = DeviceBlock(*device_, floats(host_.params.size()));
  d.states = DeviceBlock(*device_, floats(host_.states.size()));
  const GraphNode* opt = nullptr;
  for (const GraphNode& n : g.nodes) {
    if (n.op == ModelOp::OptimizerStep) opt = &n;
    if (n.op == ModelOp::OptimizerStep && loss_scaled(n.attrs)) loss_scale_.emplace();
  }
  if (opt) d.optimizer = std::make_unique<GpuOptimizer>(*device_, *opt, static_cast<int64_t>(host_.params.size()));
  d.step_counter = DeviceBlock(*device_, 2 * sizeof(uint64_t));
  d.libraries = std::make_unique<LibraryNodes>(*device_, options_.allow_tf32);
  d.expr_state.assign(g.nodes.size(), 0);
  d.expr_why.assign(g.nodes.size(), "");
  if (options_.time_nodes) {
    node_seconds_.assign(g.nodes.size(), 0.0);
    node_ran_on_.assign(g.nodes.size(), NodeRanOn::NotRun);
  }
  sync_to_device();
}

GpuExecutor::~GpuExecutor() = default;

std::string GpuExecutor::description() const {
  std::string text = fmt::format("gpu on {}: {}", device_->describe(), impl_->libraries->describe());
  if (expr_device_runs_ + expr_host_runs_ > 0) {
    int device_nodes = 0, host_nodes = 0;
    std::string why;
    for (size_t i = 0; i < impl_->expr_state.size(); ++i) {
      if (impl_->expr_state[i] == 1) ++device_nodes;
      if (impl_->expr_state[i] == 2) {
        ++host_nodes;
        if (why.empty()) why = impl_->expr_why[i];
      }
    }
    text += fmt::format("; expr nodes: {} as generated kernels", device_nodes);
    if (host_nodes) text += fmt::format(", {} on the host ({})", host_nodes, why);
  }
  if (options_.allow_tf32) text += "; TF32 allowed";
  return text;
}

size_t GpuExecutor::value_bytes(int value, int64_t rows) const {
  return static_cast<size_t>(shape_num_elements(g_.full_shape(value, rows))) *
         dtype_size(g_.values.at(static_cast<size_t>(value)).dtype);
}

DevPtr GpuExecutor::address(int id) const {
  const GraphValue& v = g_.values.at(static_cast<size_t>(id));
  const Impl& d = *impl_;
  if (v.role == ValueRole::Param) return d.params.at(v.offset * 4);
  if (v.role == ValueRole::State) return d.states.at(v.offset * 4);
  if (v.grad_of >= 0) return d.grads.at(g_.values.at(static_cast<size_t>(v.grad_of)).offset * 4);
  if (auto it = d.fed.find(id); it != d.fed.end()) return it->second.ptr();
  const int64_t offset = arena_.offset.at(static_cast<size_t>(id));
  if (offset < 0) throw std::logic_error(fmt::format("gpu executor: %{} has no place on the device", id));
  return d.arena.at(offset);
}

void GpuExecutor::prepare(int64_t rows) {
  Impl& d = *impl_;
  if (d.arena.ptr() && rows <= arena_.rows) return;  // a plan for more rows serves fewer
  StepArena plan = plan_step_arena(g_, rows);
  size_t scratch = 0;
  for (const GraphNode& n : g_.nodes)
    if (n.op != ModelOp::Expr && n.op != ModelOp::OptimizerStep)
      scratch = std::max(scratch, node_scratch_bytes(g_, n, rows));
  int64_t fed_bytes = 0;
  std::vector<int> fed_ids = g_.inputs;
  if (g_.target >= 0) fed_ids.push_back(g_.target);
  for (int id : fed_ids) fed_bytes += static_cast<int64_t>(value_bytes(id, rows));
  // Refused before the step with the figures, rather than an allocation failure in the middle of it.
  d.arena.reset();
  d.scratch.reset();
  d.fed.clear();
  const int64_t free = device_->free_bytes();
  const int64_t need = plan.bytes + fed_bytes + static_cast<int64_t>(scratch);
  if (free >= 0 && need > free)
    throw std::runtime_error(fmt::format(
        "a step of {} examples needs {} on the GPU (activations and gradients {} in the block planned for them, the "
        "batch {}, reduction scratch {}) beyond the parameters, gradients and optimizer state already there, but only "
        "{} of the GPU's {} is free; a smaller batch needs proportionally less",
        rows, bytes_text(need), bytes_text(plan.bytes), bytes_text(fed_bytes),
        bytes_text(static_cast<int64_t>(scratch)), bytes_text(free), bytes_text(device_->total_bytes())));
  arena_ = std::move(plan);
  d.arena = DeviceBlock(*device_, static_cast<size_t>(std::max<int64_t>(arena_.bytes, 1)));
  d.scratch = DeviceBlock(*device_, std::max<size_t>(scratch, 1));
  for (int id : fed_ids) d.fed.emplace(id, DeviceBlock(*device_, std::max<size_t>(value_bytes(id, rows), 1)));
}

double GpuExecutor::run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
                        PhaseSeconds* seconds) {
  if (inputs.size() != g_.inputs.size())
    throw std::logic_error(fmt::format("gpu executor: {} inputs for {}", inputs.size(), g_.inputs.size()));
  const int64_t rows = !inputs.empty() ? inputs[0].shape().at(0) : target ? target->shape().at(0) : 1;
  prepare(rows);
  rows_ = rows;
  done_ = -1;
  loss_ = 0;
  auto feed = [&](int id, const Tensor& t, DType dtype) {
    Tensor x = t.dtype() == dtype ? t : cast_tensor(t, dtype);
    const Shape want = g_.full_shape(id, rows);
    if (x.num_elements() != shape_num_elements(want))
      throw std::runtime_error(fmt::format("`{}` is {} per batch, the model needs {}", g_.values[id].name,
                                           shape_to_string(x.shape()), shape_to_string(want)));
    device_->upload(impl_->fed.at(id).ptr(), x.raw(), x.byte_size());
  };
  for (size_t k = 0; k < inputs.size(); ++k) feed(g_.inputs[k], inputs[k], g_.values[g_.inputs[k]].dtype);
  if (target && g_.target >= 0) feed(g_.target, *target, DType::F32);
  device_->zero(impl_->grads.ptr(), impl_->grads.bytes());
  const uint64_t counter[2] = {step, static_cast<uint64_t>(first_example_)};
  device_->upload(impl_->step_counter.ptr(), counter, sizeof counter);
  if (g_.loss >= 0) impl_->loss_value = address(g_.loss);
  run_phases(-1, last, step, seconds);
  return loss_;
}

double GpuExecutor::resume(uint64_t step, OpCategory last, PhaseSeconds* seconds) {
  if (done_ < 0) throw std::logic_error("gpu executor: resume before run");
  run_phases(done_, last, step, seconds);
  return loss_;
}

void GpuExecutor::run_phases(int after, OpCategory last, uint64_t step, PhaseSeconds* seconds) {
  // The kernels are asynchronous: a phase's time is taken when the device has finished it, which costs
  // one wait per phase, only when the caller asks for the times.
  int phase_open = -1;
  auto phase_start = std::chrono::steady_clock::now();
  auto close_phase = [&] {
    if (phase_open < 0 || !seconds) return;
    device_->synchronize();
    (*seconds)[phase_open] += std::chrono::duration<double>(std::chrono::steady_clock::now() - phase_start).count();
  };
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const GraphNode& n = g_.nodes[i];
    const int phase = static_cast<int>(n.phase);
    if (phase <= after || phase > static_cast<int>(last)) continue;
    if (phase != phase_open) {
      close_phase();
      phase_open = phase;
      phase_start = std::chrono::steady_clock::now();
    }
    const auto node_start = options_.time_nodes ? std::chrono::steady_clock::now() : phase_start;
    NodeRanOn ran_on = NodeRanOn::StepKernels;
    switch (node_kernel_of(n.op)) {  // the executor's claim
      case NodeKernel::Generated:
        if (run_expr(n, i)) ++impl_->kernel_runs[n.op], ran_on = NodeRanOn::GeneratedKernel;
        else ran_on = NodeRanOn::Host;
        break;
      case NodeKernel::Optimizer:
        run_optimizer(n);
        ++impl_->kernel_runs[n.op];
        ran_on = NodeRanOn::Optimizer;
        break;
      case NodeKernel::StepKernels:
      case NodeKernel::Cudnn:
      case NodeKernel::CublasLt:
        if (run_node(n, step))
          ran_on = node_kernel_of(n.op) == NodeKernel::Cudnn ? NodeRanOn::Cudnn : NodeRanOn::CublasLt;
        ++impl_->kernel_runs[n.op];
        break;
    }
    if (options_.time_nodes) {
      device_->synchronize();
      node_seconds_[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - node_start).count();
      node_ran_on_[i] = ran_on;
    }
  }
  close_phase();
  done_ = std::max(done_, static_cast<int>(last));
}

bool GpuExecutor::run_node(const GraphNode& n, uint64_t step) {
  NodeOperands ops;
  ops.graph = &g_;
  ops.node = &n;
  ops.rows = rows_;
  ops.step = step;
  ops.seed = seed_;
  for (int v : n.inputs) ops.inputs.push_back(address(v));
  for (int v : n.outputs) ops.outputs.push_back(address(v));
  ops.scratch = impl_->scratch.ptr();
  ops.step_counter = impl_->step_counter.ptr();
  if (impl_->optimizer) ops.loss_scale = impl_->optimizer->loss_scale_value();
  const bool on_library = impl_->libraries->run(ops);
  if (!on_library) launch_node(device_->step_kernels(), ops);
  if (n.op == ModelOp::Loss) {
    float loss = 0;
    device_->download(&loss, address(n.outputs.at(0)), sizeof loss);
    loss_ = loss;
  }
  return on_library;
}

bool GpuExecutor::run_expr(const GraphNode& n, size_t index) {
  Impl& d = *impl_;
  if (d.expr_state[index] == 0) {
    std::string why = "no generated kernel";
    if (n.gpu && n.gpu->unsupported.empty() && device_->load_generated(*n.gpu, why)) d.expr_state[index] = 1;
    else {
      d.expr_state[index] = 2;
      d.expr_why[index] = n.gpu && !n.gpu->unsupported.empty() ? n.gpu->unsupported : why;
    }
  }
  if (d.expr_state[index] == 2) {
    run_expr_on_host(n);
    ++expr_host_runs_;
    return false;
  }
  // runtime/plan/gpu_kernel.h's ABI: the inputs (in the kernel's order), the outputs, rows, first_index,
  // epoch, seed. The kernel covers rows x elements of every result.
  const GpuKernel& k = *n.gpu;
  std::vector<DevPtr> ptrs;
  for (int field : k.input_fields) ptrs.push_back(address(n.inputs.at(static_cast<size_t>(field))));
  int64_t items = 0;
  for (int v : n.outputs) {
    ptrs.push_back(address(v));
    items += shape_num_elements(g_.full_shape(v, rows_));
  }
  long long rows = rows_, first_index = 0, epoch = 0;
  unsigned long long seed = seed_;
  std::vector<void*> params;
  for (DevPtr& p : ptrs) params.push_back(&p);
  params.push_back(&rows);
  params.push_back(&first_index);
  params.push_back(&epoch);
  params.push_back(&seed);
  device_->launch_generated(k.entry, items, params.data());
  ++expr_device_runs_;
  return true;
}

int64_t GpuExecutor::kernel_runs(ModelOp op) const {
  auto it = impl_->kernel_runs.find(op);
  return it == impl_->kernel_runs.end() ? 0 : it->second;
}

void GpuExecutor::run_expr_on_host(const GraphNode& n) {
  // The interpreter, as the reference executor runs the node, on host copies of its inputs.
  Chunk c;
  c.rows = rows_;
  std::vector<std::string> fields;
  for (const Instr& i : n.fn->body)
    if (op_has(i.op, OpFlag::Input)) fields.push_back(i.attrs.at("field").s);
  for (int v : n.inputs) {
    Tensor t = Tensor::empty(g_.values[v].dtype, g_.full_shape(v, rows_));
    device_->download(t.raw(), address(v), t.byte_size());
    Column col;
    col.dense = t;
    c.columns.push_back(col);
  }
  EvalContext ctx;
  ctx.seed = seed_;
  std::vector<Column> results = run_function(*n.fn, fields, c, ctx);
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const int o = n.outputs[k];
    Tensor t = results[k].dense;
    if (t.dtype() != g_.values[o].dtype) t = cast_tensor(t, g_.values[o].dtype);
    if (t.byte_size() != value_bytes(o, rows_))
      throw std::logic_error(fmt::format("gpu executor: expr node gives {} {} for %{}", dtype_name(t.dtype()),
                                         shape_to_string(t.shape()), o));
    device_->upload(address(o), t.raw(), t.byte_size());
  }
}

void GpuExecutor::run_optimizer(const GraphNode&) {
  GpuOptimizer& opt = *impl_->optimizer;
  opt.step(impl_->params.ptr(), impl_->grads.ptr(), impl_->loss_value, slots_);
  if (loss_scale_) opt.read_loss_scale(*loss_scale_);
}

void GpuExecutor::sync_to_host() {
  Impl& d = *impl_;
  device_->download(host_.params.data(), d.params.ptr(), host_.params.size() * sizeof(float));
  device_->download(host_.grads.data(), d.grads.ptr(), host_.grads.size() * sizeof(float));
  device_->download(host_.states.data(), d.states.ptr(), host_.states.size() * sizeof(float));
  if (d.optimizer) d.optimizer->download_slots(slots_);
  if (d.optimizer && loss_scale_) d.optimizer->read_loss_scale(*loss_scale_);
}

void GpuExecutor::sync_to_device() {
  Impl& d = *impl_;
  device_->upload(d.params.ptr(), host_.params.data(), host_.params.size() * sizeof(float));
  device_->upload(d.states.ptr(), host_.states.data(), host_.states.size() * sizeof(float));
  if (d.optimizer) d.optimizer->upload_slots(slots_);
  if (d.optimizer && loss_scale_) d.optimizer->write_loss_scale(*loss_scale_);
}

Tensor GpuExecutor::host_value(int id) {
  Tensor t = Tensor::empty(g_.values.at(static_cast<size_t>(id)).dtype, g_.full_shape(id, rows_));
  device_->download(t.raw(), address(id), t.byte_size());
  return t;
}

}  // namespace pipec::gpu

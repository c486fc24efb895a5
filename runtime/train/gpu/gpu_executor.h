// The GPU executor of a training-step graph: the step on one NVIDIA GPU (or on the host emulation of one,
// runtime/train/gpu/host_step_device.h, which is how CI tests it).
//
// Memory: the parameters, their gradients, the non-trainable state and the optimizer's slots live on the
// device in flat buffers with the CPU's layout (Keras' names and layouts), the step's computed values in
// one device block at the offsets of the liveness plan (runtime/model/step_arena.h), the batch in its own
// buffers; all of it allocated at the first step (and again for a larger batch), never per step.
// Kernels: every node kind through the step kernels (kernels/, node_kernels.h), conv2d and dense through
// cuDNN and cuBLASLt where those libraries are found, expr nodes through their generated CUDA kernels
// (GraphNode::gpu, printed from the same loop nests the CPU's JIT compiles), or on the host when a node
// has none. The host's copies of the state (buffers(), optimizer_slots()) are current after sync_to_host().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/train/gpu/step_device.h"
#include "runtime/train/step_executor.h"

namespace pipec::gpu {

struct GpuExecutorOptions {
  /// Let cuDNN and cuBLASLt use TF32 tensor cores for fp32 convolutions and matmuls (`--allow-tf32`):
  /// faster, about 3 decimal digits less exact. Off: fp32 is fp32.
  bool allow_tf32 = false;
  /// A profile: wait for the device after every node and add the node's wall time to node_seconds()
  /// (bench/train/step_time.cpp --device gpu --nodes). One wait per node makes the step slower; the
  /// times are each node's own, launch latency included.
  bool time_nodes = false;
};

/// Where a node ran on its last step: what node_seconds() is broken down by.
enum class NodeRanOn { NotRun, Cudnn, CublasLt, StepKernels, GeneratedKernel, Host, Optimizer };
const char* node_ran_on_name(NodeRanOn r);

class GpuExecutor final : public StepExecutor {
 public:
  /// Parameters start as Keras initializes them (initializers.h) from `seed`, which also keys dropout.
  GpuExecutor(const ModelGraph& g, uint64_t seed, std::unique_ptr<StepDevice> device, GpuExecutorOptions options = {});
  ~GpuExecutor() override;

  std::string description() const override;
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds = nullptr) override;
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr) override;
  FlatBuffers<float>& buffers() override { return host_; }
  OptimizerSlots<float>& optimizer_slots() override { return slots_; }
  void sync_to_host() override;
  void sync_to_device() override;
  LossScale* loss_scale() override { return loss_scale_ ? &*loss_scale_ : nullptr; }
  Tensor host_value(int id) override;
  const StepArena& arena() const override { return arena_; }
  void set_first_example(int64_t first) override { first_example_ = first; }

  StepDevice& device() { return *device_; }
  /// Runs of nodes of kind `op` on the executor's own kernels so far (its claim, gpu_kernel_claim.h):
  /// step kernels, cuDNN, cuBLASLt, generated kernels, the optimizer's; expr nodes run on the host are not
  /// counted.
  int64_t kernel_runs(ModelOp op) const;
  /// Expr nodes that ran their generated kernel on the device, and runs on the host instead.
  int64_t expr_device_runs() const { return expr_device_runs_; }
  int64_t expr_host_runs() const { return expr_host_runs_; }
  /// With GpuExecutorOptions::time_nodes: each node's wall time summed over the steps so far (by index
  /// in g.nodes), and where it ran; empty without.
  const std::vector<double>& node_seconds() const { return node_seconds_; }
  const std::vector<NodeRanOn>& node_ran_on() const { return node_ran_on_; }

 private:
  struct Impl;
  void prepare(int64_t rows);
  void run_phases(int after, OpCategory last, uint64_t step, PhaseSeconds* seconds);
  bool run_node(const GraphNode& n, uint64_t step);  // true: a library (cuDNN, cuBLASLt) ran it
  bool run_expr(const GraphNode& n, size_t index);   // false: it ran on the host
  void run_expr_on_host(const GraphNode& n);
  void run_optimizer(const GraphNode& n);
  DevPtr address(int value) const;
  size_t value_bytes(int value, int64_t rows) const;

  const ModelGraph& g_;
  uint64_t seed_;
  int64_t first_example_ = 0;
  std::unique_ptr<StepDevice> device_;
  GpuExecutorOptions options_;
  FlatBuffers<float> host_;
  OptimizerSlots<float> slots_;
  std::optional<LossScale> loss_scale_;
  std::unique_ptr<Impl> impl_;
  StepArena arena_;
  int64_t rows_ = 0;
  int done_ = -1;
  double loss_ = 0;
  int64_t expr_device_runs_ = 0, expr_host_runs_ = 0;
  std::vector<double> node_seconds_;
  std::vector<NodeRanOn> node_ran_on_;
};

}  // namespace pipec::gpu

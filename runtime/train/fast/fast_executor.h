// The fast CPU executor of a training-step graph: the layers on the oneDNN kernels of runtime/train/dnnl
// (conv2d, conv2d_transpose, dense, pools, global pools, batch_norm, layer_norm, upsample2d, softmax,
// leaky_relu, gelu), expr nodes on their JIT-compiled kernels, the optimizer's loop over the flat
// buffers split over its threads, everything else (the loss, dropout) with the reference executor's
// run_reference_node. It owns its StepState (the buffers, the arena, the walk over the schedule) as the
// reference does, and derives from neither. `pipec run` trains on it unless -O0 or `--executor
// reference` asks for the reference.
//
// Each layer node gets its kernel op once per batch size (a last short batch makes a second set), at
// the first step of that size or before it, when the training loop's memory plan asks what the ops
// will hold (prepare_memory); the kernel library caches primitives by shape, so equal layers share them. Activations
// and gradients stay in Keras layouts (NHWC, HWIO, [in, out]); the ops reorder weights once per step (CpuKernels'
// weights generation moves after the optimizer). A layer's backward-data, backward-weights and bias
// gradient nodes run as one kernel call: the first of them in the schedule computes all three.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/train/reference/reference_executor.h"

namespace pipec {

/// How the fast executor computes a node kind: its claim, made in one place (fast_kernel_of). The
/// executor decides by it which nodes go to its kernels, and tests/unit/model_op_coverage_test.cpp holds
/// it to it: every kind claimed runs on the executor's own kernel and agrees with the reference.
enum class FastKernel {
  Reference,    // the reference executor's loops (run_reference_node), over this executor's threads
  OneDnn,       // a oneDNN op of the node's own
  WithForward,  // a oneDNN call of its forward node's op (GraphNode::forward): a weighted layer's backward
                // group (one call computes all three), or a backward reading what its forward's op kept
                // (max positions, batch statistics); the reference's loops for a node without that forward
  Jit,          // its compiled kernel (GraphNode::native); the reference's loops for a node without one
};
FastKernel fast_kernel_of(ModelOp op);
inline bool fast_executor_computes(ModelOp op) { return fast_kernel_of(op) != FastKernel::Reference; }

/// How a `mixed_bf16` step's layers (conv2d, conv2d_transpose, dense) multiply on the CPU: from bf16
/// operands on oneDNN's bf16 kernels (`Native`), or on the f32 kernels from operands the graph rounded to
/// bf16 (`Emulated`: same values, no speed-up). `Auto` takes Native where the CPU has bf16 instructions
/// (train::CpuKernels::native_bf16). fp32 and mixed_fp16 steps always run the f32 kernels.
enum class CpuBf16 { Auto, Native, Emulated };
/// `auto`, `native` or `emulated` (`pipec run --cpu-bf16`); nullopt for anything else.
std::optional<CpuBf16> parse_cpu_bf16(std::string_view text);

struct FastExecutorOptions {
  /// oneDNN's OpenMP threads for each kernel call; 0: OpenMP's default (one per core).
  int threads = 0;
  /// conv2d's algorithm: Winograd where oneDNN has it unless `direct` (`pipec run --conv direct`).
  bool direct_conv = false;
  /// Tests only: every Winograd layer's first-call check acts as if its two runs had differed
  /// (train::CpuKernelOptions::winograd_differs_for_testing).
  bool winograd_differs_for_testing = false;
  /// The buffers never change after the first run (a served model: no optimizer, weights loaded once
  /// before it): each op reorders its weights into oneDNN's layout once, not at every step.
  bool constant_weights = false;
  /// `pipec run --cpu-bf16`.
  CpuBf16 cpu_bf16 = CpuBf16::Auto;
  /// A layer whose forward pass is fewer FLOPs than this at a batch size runs on one thread at that size:
  /// waking the other threads and joining them costs more than they save on so little work (a served
  /// model's one-example requests). 0: every layer on `threads`.
  int64_t serial_below_flops = 0;
  /// On bf16 kernels, the activations and gradients that are bf16 values and that only bf16 layer
  /// operands and compiled expr kernels read are stored as bf16 (runtime/model/bf16_storage.h): the same
  /// values, half the bytes. False keeps every value in f32 (what the emulation computes in).
  bool bf16_storage = true;
};

class FastExecutor final : public StepExecutor {
 public:
  /// `g` must outlive the executor. Parameters start as the reference's do from the same seed.
  FastExecutor(const ModelGraph& g, uint64_t seed, FastExecutorOptions options = {});
  ~FastExecutor() override;

  std::string description() const override;
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds = nullptr) override;
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr) override;
  /// The buffers and slots the steps compute in (no other copy: syncing costs nothing).
  FlatBuffers<float>& buffers() override { return state_.buffers(); }
  OptimizerSlots<float>& optimizer_slots() override { return state_.optimizer_slots(); }
  LossScale* loss_scale() override { return state_.loss_scale(); }
  /// A round node's output left to the layers (leave_rounds_to_bf16_layers) is computed here from its
  /// input, while that lives.
  Tensor host_value(int id) override;
  const StepArena& arena() const override { return state_.arena(); }
  void set_first_example(int64_t first) override { state_.set_first_example(first); }
  /// Every node is observed (a backward group's nodes each at their own turn, after the group ran).
  bool observe_nodes(NodeObserver observer) override {
    state_.set_node_observer(std::move(observer));
    return true;
  }

  /// A value computed by the last run and still held (as ReferenceExecutor::value); empty for a round
  /// node's output left to the layers (host_value computes it); a bf16 tensor for a value stored as
  /// bf16 (bf16_values; host_value widens it).
  const Tensor& value(int id) const { return state_.value(id); }
  /// The lifetimes its arena is planned with (StepState::first_writes, ::last_uses): a layer's backward
  /// group writes its nodes' outputs at the first of them, and reads the layer's kernel until then.
  const std::vector<int>& first_writes() const { return state_.first_writes(); }
  const std::vector<int>& last_uses() const { return state_.last_uses(); }
  /// Nodes that run on a oneDNN kernel (a backward group counts each of its nodes).
  int kernel_nodes() const;
  /// Whether the layers run on oneDNN's bf16 kernels (a mixed_bf16 step under CpuBf16 Native, or Auto on
  /// a CPU with bf16 instructions).
  bool bf16_kernels() const;
  /// On bf16 kernels: the round nodes not run because every node reading them is a layer that rounds
  /// its operands itself.
  int rounds_left_to_layers() const;
  /// On bf16 kernels with FastExecutorOptions::bf16_storage: the values stored as bf16 (0 when one node
  /// touching them could not read or write bf16, e.g. an expr kernel without its bf16 variant).
  int bf16_values() const;
  /// Kernel ops made on one thread because their layer is under FastExecutorOptions::serial_below_flops
  /// at their batch size (each node's op counts once per batch size).
  int serial_ops() const;
  /// Runs of nodes of kind `op` on this executor's own kernels (oneDNN, or compiled code) so far: what
  /// its claim (fast_kernel_of) promises, counted where the kernels are called.
  int64_t kernel_runs(ModelOp op) const;
  /// Runs of expr nodes on their compiled kernels, and runs of compiled expr nodes that fell back to the
  /// interpreter (a value that is not the dense f32 tensor the kernel was compiled for).
  int64_t expr_kernel_runs() const;
  int64_t expr_fallbacks() const;
  /// The ops of the nodes left to the reference executor's loops (element-wise work, losses, the
  /// optimizer, and the layers without a oneDNN kernel here), each once, in graph order.
  std::vector<std::string> reference_ops() const;

  /// Makes every kernel op for batches of `rows` (as the first step of that size would) and reports
  /// its block and what the kernels hold: oneDNN's scratchpad, the staged activations, reordered
  /// weights, the layers' own activations (a Winograd forward's x), workspaces.
  std::optional<ExecutorMemory> prepare_memory(int64_t rows) override;

  struct Kernels;

 private:
  struct NodeOps;
  void run_node(const GraphNode& n, int64_t rows, uint64_t step);
  NodeOps& node_ops(int f, int64_t rows);
  int ops_node(int i) const;
  StepState<float>::NodeRunner node_runner();
  /// How the reference's loops run for the kinds left to them: the optimizer's update and the rounding
  /// over this executor's threads, the update compiled.
  ReferenceLoops reference_loops() const;
  bool run_expr_kernel(const GraphNode& n, int64_t rows);
  /// Value `id`'s elements, or those of the value a layer reads instead (leave_rounds_to_bf16_layers).
  float* data(int id);
  void leave_rounds_to_bf16_layers();
  void plan_bf16_values();
  bool stored_bf16(int id) const;
  void allocate_outputs(const GraphNode& n, int64_t rows) { state_.allocate_outputs(n, rows); }

  const ModelGraph& g_;
  StepState<float> state_;
  FastExecutorOptions options_;
  std::unique_ptr<Kernels> kernels_;
};

}  // namespace pipec

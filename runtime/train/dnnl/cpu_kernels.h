// The CPU training kernels' shared state: oneDNN's engine and stream, the thread count, the cache of
// primitives, and the weights generation. This header and the op headers beside it are the whole
// interface; no oneDNN type appears in them (oneDNN 3.x changed its API: only the .cpp files of this
// folder change with it).
//
// Use: one CpuKernels for the trainer; one op object (Conv2dOp, DenseOp, ...) per layer of the step
// graph, created once; each step calls the ops' forward and backward on raw f32 buffers in Keras
// layouts, then `weights_changed()` once after the optimizer has written the parameters.
// One thread at a time drives a CpuKernels and its ops (they share one oneDNN stream and own staging
// buffers); the parallelism is inside each call, on OpenMP threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/core/parallel_for.h"
#include "runtime/train/dnnl/train_kernel_error.h"

namespace pipec::train {

/// Where activations live while a primitive runs. The caller's buffers are always NHWC (batch first);
/// `Any` lets oneDNN choose (a blocked layout such as nChw16c) and reorders in and out around each
/// call, `Nhwc` asks the primitive to work on the caller's layout directly (no reorders).
enum class ActivationLayout { Any, Nhwc };
inline const char* layout_name(ActivationLayout l) { return l == ActivationLayout::Any ? "any" : "nhwc"; }

/// How conv2d multiplies. `Auto` takes Winograd's F(4x4, 3x3) where oneDNN has it (3x3 windows, stride
/// 1, no dilation; AVX-512 CPUs) and the direct algorithm elsewhere: on the chess net's 8x8 boards it
/// does the convolutions' work in about half the time, and its results differ from the direct
/// algorithm's by about 1e-6 of the output's largest value (tests/unit/train_conv_algorithm_test.cpp).
/// A Winograd layer's first forward and first backward each run twice, the second time from scratch
/// (weights reordered again), and must give the same bits: oneDNN 2.6.3's Winograd kernels gave a
/// different result on each run on a 16-core Intel Xeon (AMX), where the direct algorithm and one thread
/// repeat exactly. A shape whose results differ takes the direct algorithm from then on
/// (Conv2dOp::winograd_refused), for every layer of that shape.
/// `Direct` always takes the direct algorithm (`pipec run --conv direct`).
enum class ConvAlgorithm { Auto, Direct };
inline const char* conv_algorithm_name(ConvAlgorithm a) { return a == ConvAlgorithm::Auto ? "auto" : "direct"; }

struct CpuKernelOptions {
  /// OpenMP threads for every primitive created afterwards; 0 keeps OpenMP's default (all cores, or
  /// OMP_NUM_THREADS).
  int threads = 0;
  ActivationLayout activation_layout = ActivationLayout::Nhwc;
  ConvAlgorithm conv_algorithm = ConvAlgorithm::Auto;
  /// conv2d, conv2d_transpose and dense read their operands (x, the kernel, dy) in bf16 and accumulate in
  /// f32 (oneDNN's bf16 primitives; Winograd has none, so conv2d takes the direct algorithm); what they
  /// write (y, dx, the kernel and bias gradients) and the bias stay f32. The caller's buffers stay f32:
  /// under mixed_bf16 the step graph has already rounded every such operand to bf16, so converting it is
  /// exact and the layer computes what the f32 kernels compute from the same values, up to the order of
  /// the f32 sums. Fast only where the CPU has bf16 instructions (native_bf16()).
  bool bf16 = false;
  /// Tests only: conv2d's check of a Winograd layer's first calls (ConvAlgorithm) acts as if the two
  /// runs had differed, so the fallback to the direct algorithm can be tested on any CPU.
  bool winograd_differs_for_testing = false;
};

/// Memory the kernels hold of their own, beside the caller's buffers: what a training step's memory
/// plan adds to its values. Each op reports its part (its `owned_memory()`), CpuKernels the parts its ops
/// share (shared_memory()). Bytes a primitive's layout pads (channels rounded up to a block) count.
struct KernelMemory {
  int64_t scratchpad = 0;   // oneDNN's scratchpad: one buffer for every primitive, the largest need
  int64_t staging = 0;      // the two shared buffers activations are reordered through for one call
  int64_t weights = 0;      // weights and weight gradients reordered to a primitive's layout, per layer
  int64_t activations = 0;  // activations a layer keeps in a primitive's layout (a Winograd forward's x,
                            // reused by backward-weights) and copies of the part a strided window reaches
  int64_t workspaces = 0;   // what a forward keeps for its backward (max pooling's positions), statistics

  int64_t total() const { return scratchpad + staging + weights + activations + workspaces; }
  KernelMemory& operator+=(const KernelMemory& o) {
    scratchpad += o.scratchpad, staging += o.staging, weights += o.weights;
    activations += o.activations, workspaces += o.workspaces;
    return *this;
  }
};

/// Runs body(begin, end) over [0, rows) cut into `threads` contiguous parts, in parallel on the OpenMP
/// threads oneDNN's kernels use (so the training step's own loops share them instead of adding
/// threads); one call on the calling thread when threads <= 1 or rows < 2.
void parallel_rows(int threads, int64_t rows, const std::function<void(int64_t begin, int64_t end)>& body);
/// parallel_rows on `threads` threads, as the ParallelFor the training loops take.
ParallelFor parallel_for(int threads);

class CpuKernels {
 public:
  explicit CpuKernels(CpuKernelOptions options = {});
  ~CpuKernels();
  CpuKernels(const CpuKernels&) = delete;
  CpuKernels& operator=(const CpuKernels&) = delete;

  /// Threads for ops created from now on. An op keeps the count it was created with (oneDNN splits its
  /// work at creation) and sets it on the calling thread for each call: OpenMP's thread count belongs
  /// to the thread that starts the parallel region, so the pipeline's own pool is never affected.
  void set_threads(int threads);
  /// The count ops created now will use (OpenMP's default when 0 was asked for).
  int threads() const;
  const CpuKernelOptions& options() const { return options_; }

  /// Called once per step after the optimizer wrote the parameters: ops reorder their weights again on
  /// their next call. Until then a weight reordered for a forward is reused by later calls that pass the
  /// same pointer (the backward of the same step, or a second forward).
  void weights_changed() { ++weights_generation_; }
  uint64_t weights_generation() const { return weights_generation_; }

  /// Number of distinct primitive sets created (ops with equal shapes and attributes share one).
  size_t cached_primitive_sets() const;
  /// What the ops made so far share: the scratchpad and the staging buffers, at the size they have
  /// once every op has run (known when the ops are made, before any call).
  KernelMemory shared_memory() const;

  /// The CPU instruction set oneDNN dispatches to ("avx2", "avx512_core", ...) and its version.
  static std::string isa();
  static std::string version();
  /// Whether the CPU has bf16 dot-product instructions oneDNN uses (AVX512_BF16, AMX): where the `bf16`
  /// option is faster than f32. oneDNN honours DNNL_MAX_CPU_ISA, so DNNL_MAX_CPU_ISA=AVX2 makes this false.
  static bool native_bf16();
  /// Whether oneDNN has bf16 kernels for this CPU at all: with bf16 instructions, or on any AVX-512 CPU by
  /// emulating them (slower than f32; for tests). Not on AVX2 CPUs, where the `bf16` option cannot be used.
  static bool bf16_kernels_exist();

  struct Impl;  // oneDNN state; defined in dnnl_common.h, used by the ops' .cpp files
  Impl& impl() { return *impl_; }

 private:
  CpuKernelOptions options_;
  uint64_t weights_generation_ = 1;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pipec::train

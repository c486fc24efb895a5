// The step graph's nodes as launches of the step kernels (runtime/train/gpu/kernels/): every kind of
// model_ops.def but `expr` (element-wise work, printed from its loop nests by the executor) computed as
// the reference executor computes it (runtime/train/reference/reference_executor.cpp: the same attributes,
// geometry, fused relu, inference modes, losses, loss scaling, dropout's Philox stream), and the
// optimizer's update with mixed_fp16's dynamic loss scaling decided on the device.
//
// These are the always-available kernels of the GPU executor (cuDNN and cuBLASLt take conv2d and dense
// where they are present) and the ones CI runs on the host (HostKernelLauncher). Reductions (kernel and
// bias gradients, batch_norm's statistics and sums, layer_norm's parameter gradients, the losses, the
// global norm) are partial sums over fixed blocks, combined in block order: the result depends on the
// shapes only, never on the grid, so a run is bit-for-bit repeatable.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "runtime/model/model_graph.h"
#include "runtime/train/gpu/kernel_launcher.h"
#include "runtime/train/math/loss_scale.h"
#include "runtime/train/math/optimizer.h"

namespace pipec::gpu {

/// Bytes of scratch launch_node needs for node `n` over `rows` examples (0 for kinds without partial
/// sums). The executor gives each node at least this much at NodeOperands::scratch, 256-byte aligned.
size_t node_scratch_bytes(const ModelGraph& g, const GraphNode& n, int64_t rows);

/// Launches node `o.node` in order on `launcher`. std::logic_error naming the node when its kind is
/// expr or optimizer_step (not node kernels), an attribute is one the kernels do not implement, or an
/// operand is missing.
void launch_node(KernelLauncher& launcher, const NodeOperands& o);

/// The per-step scalars of the update (kernels/optimizer.cuh's step_scalars, float[3]): the rate of the
/// step taken after `iterations` steps (0 for the first) from the schedule, Adam's bias-corrected rate
/// and the weight decay factor, each rounded to f32 as optimizer_step rounds it. With mixed_fp16,
/// `iterations` counts the steps taken, not the skipped ones (as OptimizerSlots::iterations).
std::array<float, 3> optimizer_step_scalars(const OptimizerConfig& c, int64_t iterations);

/// The optimizer's device buffers, each a device address (0: absent).
struct OptimizerDeviceState {
  int64_t n = 0;            // elements of every flat buffer
  DevPtr params = 0;        // float[n], updated in place
  DevPtr grads = 0;         // float[n] (unscaled in place under mixed_fp16, as on the CPU)
  DevPtr m = 0;             // float[n]: adam's first moment, sgd's velocity (unused by plain sgd)
  DevPtr v = 0;             // float[n]: adam's second moment (unused by sgd)
  DevPtr step_scalars = 0;  // float[3]: optimizer_step_scalars(), written by the host before each step
  DevPtr status = 0;        // double[kOptimizerStatusSlots], written by the device (OptimizerStatus)
  DevPtr scratch = 0;       // optimizer_scratch_bytes(n)
  // mixed_fp16 (the optimizer_step node says `loss_scale`): all three set; 0 otherwise.
  DevPtr loss = 0;              // float: this step's loss (the loss node's output)
  DevPtr loss_scale_state = 0;  // double[kLossScaleSlots]: LossScale on the device (loss_scale_to_device)
  DevPtr loss_scale_value = 0;  // float: the scale loss_backward multiplies by (NodeOperands::loss_scale),
                                // updated by the step for the next one
};

constexpr int kOptimizerStatusSlots = 4;
constexpr int kLossScaleSlots = 4;

/// Scratch bytes launch_optimizer_step needs for `n` elements.
size_t optimizer_scratch_bytes(int64_t n);

/// One update of every parameter, bit for bit optimizer_step's (with fused multiply-add off): under
/// mixed_fp16 first the finite check of the loss and every gradient (a skip flag on the device), the
/// loss scale's change by LossScale's rules and the gradients unscaled; then the global norm (with
/// global_clipnorm) over optimizer.h's kNormBlock blocks; then the update, which a skip leaves undone.
void launch_optimizer_step(KernelLauncher& launcher, const OptimizerConfig& c, const OptimizerDeviceState& s);

/// What the device reports of a step (the status buffer read back).
struct OptimizerStatus {
  double grad_norm = 0;   // before clipping (0 without global_clipnorm; meaningless on a skipped step)
  double clip_scale = 1;  // what the gradients were multiplied by
  bool skipped = false;   // mixed_fp16: the update was skipped (a non-finite loss or gradient)
};
OptimizerStatus optimizer_status(const std::array<double, kOptimizerStatusSlots>& status);

/// LossScale to and from its device form (checkpoints, --resume, the progress line).
std::array<double, kLossScaleSlots> loss_scale_to_device(const LossScale& s);
LossScale loss_scale_from_device(const std::array<double, kLossScaleSlots>& state);

/// Convolution kernels between Keras' HWIO [kh, kw, in, out] and cuDNN's KRSC [out, kh, kw, in] (also
/// their gradients, and conv2d_transpose's HWOI kernels with `in` and `out` exchanged).
void launch_hwio_to_krsc(KernelLauncher& launcher, DevPtr hwio, DevPtr krsc, int64_t kh, int64_t kw, int64_t in,
                         int64_t out);
void launch_krsc_to_hwio(KernelLauncher& launcher, DevPtr krsc, DevPtr hwio, int64_t kh, int64_t kw, int64_t in,
                         int64_t out);

}  // namespace pipec::gpu

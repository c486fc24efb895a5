// The GPU executor's optimizer: the slots (Adam's moments, SGD's velocity), the per-step scalars, the
// status the device reports and, under mixed_fp16, the loss scale, all in device memory beside the flat
// buffers; each step the host writes the step's scalars (the schedule's rate at the step count), the
// device decides the skip, clips and updates (node_kernels.h's launch_optimizer_step), and the host reads
// the status back to keep OptimizerSlots' count, rate and norm as the CPU executors keep them.
#pragma once

#include <cstdint>

#include "runtime/model/model_graph.h"
#include "runtime/train/gpu/step_device.h"
#include "runtime/train/math/loss_scale.h"
#include "runtime/train/math/optimizer.h"

namespace pipec::gpu {

class GpuOptimizer {
 public:
  /// For the optimizer_step node `node` over `n` parameters; `loss` is the device float the loss node
  /// writes (read by mixed_fp16's finite check).
  GpuOptimizer(StepDevice& device, const GraphNode& node, int64_t n);

  /// The device float loss_backward multiplies by under mixed_fp16 (NodeOperands::loss_scale); 0 otherwise.
  DevPtr loss_scale_value() const { return dynamic_scale_ ? scale_value_.ptr() : 0; }

  /// One update of `params` from `grads` (device flat buffers); `loss` is the loss node's output. Keeps
  /// `slots`' count, rate and norm as optimizer_step keeps them (a skipped mixed_fp16 step leaves them).
  /// Returns false when the device skipped the update.
  bool step(DevPtr params, DevPtr grads, DevPtr loss, OptimizerSlots<float>& slots);

  void read_loss_scale(LossScale& s);
  void write_loss_scale(const LossScale& s);
  /// The slots' moments to and from the host (checkpoints, --resume), in OptimizerSlots' CPU sizes.
  void download_slots(OptimizerSlots<float>& slots);
  void upload_slots(const OptimizerSlots<float>& slots);

 private:
  StepDevice& d_;
  OptimizerConfig config_;
  int64_t n_;
  bool dynamic_scale_ = false;
  DeviceBlock m_, v_, scalars_, status_, scratch_, scale_state_, scale_value_;
};

}  // namespace pipec::gpu

#include "runtime/train/gpu/gpu_optimizer.h"

#include <array>

#include "runtime/train/gpu/node_kernels.h"

namespace pipec::gpu {

GpuOptimizer::GpuOptimizer(StepDevice& device, const GraphNode& node, int64_t n)
    : d_(device), config_(OptimizerConfig::from_node(node)), n_(n), dynamic_scale_(node.attr("loss_scale") != nullptr) {
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float);
  m_ = DeviceBlock(d_, bytes);
  v_ = DeviceBlock(d_, bytes);
  d_.zero(m_.ptr(), bytes);
  d_.zero(v_.ptr(), bytes);
  scalars_ = DeviceBlock(d_, 3 * sizeof(float));
  status_ = DeviceBlock(d_, kOptimizerStatusSlots * sizeof(double));
  scratch_ = DeviceBlock(d_, std::max<size_t>(optimizer_scratch_bytes(n), 1));
  if (dynamic_scale_) {
    scale_state_ = DeviceBlock(d_, kLossScaleSlots * sizeof(double));
    scale_value_ = DeviceBlock(d_, sizeof(float));
    write_loss_scale(LossScale{});
  }
}

bool GpuOptimizer::step(DevPtr params, DevPtr grads, DevPtr loss, OptimizerSlots<float>& slots) {
  const std::array<float, 3> scalars = optimizer_step_scalars(config_, slots.iterations);
  d_.upload(scalars_.ptr(), scalars.data(), sizeof scalars);
  // The device writes only the status slots its step uses (the skip flag under mixed_fp16, the norm
  // with clipping): the others read as zero, not as what an earlier step or the allocation left.
  d_.zero(status_.ptr(), status_.bytes());
  OptimizerDeviceState s;
  s.n = n_;
  s.params = params;
  s.grads = grads;
  s.m = m_.ptr();
  s.v = v_.ptr();
  s.step_scalars = scalars_.ptr();
  s.status = status_.ptr();
  s.scratch = scratch_.ptr();
  if (dynamic_scale_) {
    s.loss = loss;
    s.loss_scale_state = scale_state_.ptr();
    s.loss_scale_value = scale_value_.ptr();
  }
  launch_optimizer_step(d_.step_kernels(), config_, s);
  std::array<double, kOptimizerStatusSlots> raw{};
  d_.download(raw.data(), status_.ptr(), sizeof raw);
  const OptimizerStatus status = optimizer_status(raw);
  if (status.skipped) return false;
  slots.last_lr = config_.schedule.at(slots.iterations);
  slots.last_grad_norm = config_.global_clipnorm > 0 ? status.grad_norm : 0;
  ++slots.iterations;
  return true;
}

void GpuOptimizer::read_loss_scale(LossScale& s) {
  if (!dynamic_scale_) return;
  std::array<double, kLossScaleSlots> raw{};
  d_.download(raw.data(), scale_state_.ptr(), sizeof raw);
  s = loss_scale_from_device(raw);
}

void GpuOptimizer::write_loss_scale(const LossScale& s) {
  if (!dynamic_scale_) return;
  const std::array<double, kLossScaleSlots> raw = loss_scale_to_device(s);
  d_.upload(scale_state_.ptr(), raw.data(), sizeof raw);
  const float value = static_cast<float>(s.scale);
  d_.upload(scale_value_.ptr(), &value, sizeof value);
}

void GpuOptimizer::download_slots(OptimizerSlots<float>& slots) {
  // The CPU's sizes: m once a step has run (sgd's velocity, adam's first moment), v for adam.
  if (slots.iterations == 0 && slots.m.empty()) return;
  const bool second = config_.kind != OptimizerKind::Sgd;
  slots.m.resize(static_cast<size_t>(n_));
  d_.download(slots.m.data(), m_.ptr(), slots.m.size() * sizeof(float));
  if (second) {
    slots.v.resize(static_cast<size_t>(n_));
    d_.download(slots.v.data(), v_.ptr(), slots.v.size() * sizeof(float));
  }
}

void GpuOptimizer::upload_slots(const OptimizerSlots<float>& slots) {
  const size_t bytes = static_cast<size_t>(n_) * sizeof(float);
  if (slots.m.size() == static_cast<size_t>(n_)) d_.upload(m_.ptr(), slots.m.data(), bytes);
  else d_.zero(m_.ptr(), bytes);
  if (slots.v.size() == static_cast<size_t>(n_)) d_.upload(v_.ptr(), slots.v.data(), bytes);
  else d_.zero(v_.ptr(), bytes);
}

}  // namespace pipec::gpu

#include "runtime/train/dnnl/batch_norm.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/ops/batch_statistics.h"
#include "runtime/train/dnnl/normalization_layer.h"

namespace pipec::train {

// Training's forward is our one-pass statistics (runtime/ops/batch_statistics.h) and then the
// normalization with those statistics, which is oneDNN's `use_global_stats` primitive: oneDNN's own
// training forward reads x three times (mean, variance, normalization), this twice. So the layer's
// forward primitive reads the statistics, the batch's (its own) or the moving ones (the caller's).
struct BatchNormOp::State {
  std::unique_ptr<NormalizationLayer> layer;
};

std::string BatchNormDesc::to_string() const {
  return fmt::format("batch_norm [{}, {}, {}, {}] epsilon {}", batch, height, width, channels, epsilon);
}

BatchNormOp::BatchNormOp(CpuKernels& kernels, const BatchNormDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.batch < 1 || d.height < 1 || d.width < 1 || d.channels < 1) fail(what, "every size must be at least 1");
  if (!(d.epsilon >= 0)) fail(what, "epsilon must not be negative");
  const Dims data_dims{d.batch, d.channels, d.height, d.width};
  check_tensor_sizes(what, {{"input", data_dims}});
  OpContext ctx(kernels, what);
  const memory::desc data = f32_desc(data_dims, memory::format_tag::nhwc);
  const memory::desc channel = f32_desc({d.channels}, memory::format_tag::x);
  auto prims = ctx.primitives<ForwardBackward>(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = ctx.engine();
    auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
    batch_normalization_forward::primitive_desc train(
        batch_normalization_forward::desc(prop_kind::forward_training, data, d.epsilon, flags), user_scratchpad_attr(),
        e);
    batch_normalization_forward::primitive_desc infer(
        batch_normalization_forward::desc(prop_kind::forward_inference, data, d.epsilon,
                                          flags | normalization_flags::use_global_stats),
        user_scratchpad_attr(), e);
    // The backward is made with the training forward as its hint.
    batch_normalization_backward::primitive_desc bwd(
        batch_normalization_backward::desc(prop_kind::backward, data, data, d.epsilon, flags), user_scratchpad_attr(),
        e, train);
    return make_forward_backward<batch_normalization_forward, batch_normalization_backward>(infer, bwd);
  });
  state_->layer =
      std::make_unique<NormalizationLayer>(std::move(ctx), prims, NormalizationLayouts{data, channel, channel});
}

BatchNormOp::~BatchNormOp() = default;
BatchNormOp::BatchNormOp(BatchNormOp&&) noexcept = default;

void BatchNormOp::forward_training(const float* x, const float* gamma, const float* beta, float* y, float* moving_mean,
                                   float* moving_variance) {
  NormalizationLayer& layer = *state_->layer;
  const int64_t rows = desc_.batch * desc_.height * desc_.width, channels = desc_.channels;
  float* mean = layer.own_mean();
  float* var = layer.own_variance();
  std::vector<double> mean64(static_cast<size_t>(channels)), var64(mean64.size());
  batch_statistics<float>(rows, channels, x, mean64.data(), var64.data(), parallel_for(layer.context().threads()));
  std::copy(mean64.begin(), mean64.end(), mean);
  std::copy(var64.begin(), var64.end(), var);
  layer.forward(x, gamma, beta, y);
  // Keras' moving averages (a [channels] loop: not worth a primitive).
  const float m = desc_.momentum;
  for (int64_t c = 0; c < desc_.channels; ++c) {
    if (moving_mean) moving_mean[c] = moving_mean[c] * m + mean[c] * (1 - m);
    if (moving_variance) moving_variance[c] = moving_variance[c] * m + var[c] * (1 - m);
  }
}

void BatchNormOp::forward_inference(const float* x, const float* gamma, const float* beta, const float* moving_mean,
                                    const float* moving_variance, float* y) {
  NormalizationLayer& layer = *state_->layer;
  if (moving_mean == nullptr || moving_variance == nullptr)
    fail(layer.context().what(), "forward_inference needs the moving mean and variance");
  layer.forward(x, gamma, beta, y, moving_mean, moving_variance);
}

void BatchNormOp::backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                           float* dbeta) {
  state_->layer->backward(x, gamma, dy, dx, dgamma, dbeta);
}

std::vector<float> BatchNormOp::batch_mean() const {
  const float* p = state_->layer->own_mean();
  return std::vector<float>(p, p + desc_.channels);
}

std::vector<float> BatchNormOp::batch_variance() const {
  const float* p = state_->layer->own_variance();
  return std::vector<float>(p, p + desc_.channels);
}

KernelMemory BatchNormOp::owned_memory() const { return state_->layer->owned_memory(); }

std::string BatchNormOp::implementation_forward() const { return state_->layer->primitives().impl_forward; }
std::string BatchNormOp::implementation_backward() const { return state_->layer->primitives().impl_backward; }

}  // namespace pipec::train

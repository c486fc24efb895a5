#include "runtime/train/dnnl/layer_norm.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/normalization_layer.h"

namespace pipec::train {

// oneDNN's training forward computes each row's statistics and writes them: into the layer's own
// buffers, or the caller's (the overloads with statistics).
struct LayerNormOp::State {
  std::unique_ptr<NormalizationLayer> layer;
};

std::string LayerNormDesc::to_string() const {
  return fmt::format("layer_norm [{}, {}] epsilon {}", rows, features, epsilon);
}

LayerNormOp::LayerNormOp(CpuKernels& kernels, const LayerNormDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.rows < 1 || d.features < 1) fail(what, "every size must be at least 1");
  if (!(d.epsilon >= 0)) fail(what, "epsilon must not be negative");
  check_tensor_sizes(what, {{"input", {d.rows, d.features}}});
  OpContext ctx(kernels, what);
  const memory::desc data = f32_desc({d.rows, d.features}, memory::format_tag::ab);
  const memory::desc stats = f32_desc({d.rows}, memory::format_tag::a);
  const memory::desc feature = f32_desc({d.features}, memory::format_tag::x);
  auto prims = ctx.primitives<ForwardBackward>(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = ctx.engine();
    auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
    layer_normalization_forward::primitive_desc fwd(
        layer_normalization_forward::desc(prop_kind::forward_training, data, stats, d.epsilon, flags),
        user_scratchpad_attr(), e);
    layer_normalization_backward::primitive_desc bwd(
        layer_normalization_backward::desc(prop_kind::backward, data, data, stats, d.epsilon, flags),
        user_scratchpad_attr(), e, fwd);
    return make_forward_backward<layer_normalization_forward, layer_normalization_backward>(fwd, bwd);
  });
  state_->layer =
      std::make_unique<NormalizationLayer>(std::move(ctx), prims, NormalizationLayouts{data, feature, stats});
}

LayerNormOp::~LayerNormOp() = default;
LayerNormOp::LayerNormOp(LayerNormOp&&) noexcept = default;

void LayerNormOp::forward(const float* x, const float* gamma, const float* beta, float* y) {
  state_->layer->forward(x, gamma, beta, y);
}

void LayerNormOp::backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                           float* dbeta) {
  state_->layer->backward(x, gamma, dy, dx, dgamma, dbeta);
}

void LayerNormOp::forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                          float* variance) {
  if (mean == nullptr || variance == nullptr)
    fail(state_->layer->context().what(), "forward needs the buffers for the mean and variance");
  state_->layer->forward(x, gamma, beta, y, mean, variance);
}

void LayerNormOp::backward(const float* x, const float* gamma, const float* dy, const float* mean,
                           const float* variance, float* dx, float* dgamma, float* dbeta) {
  if (mean == nullptr || variance == nullptr)
    fail(state_->layer->context().what(), "backward needs the mean and variance");
  state_->layer->backward(x, gamma, dy, dx, dgamma, dbeta, mean, variance);
}

KernelMemory LayerNormOp::owned_memory() const { return state_->layer->owned_memory(); }

std::string LayerNormOp::implementation_forward() const { return state_->layer->primitives().impl_forward; }
std::string LayerNormOp::implementation_backward() const { return state_->layer->primitives().impl_backward; }

}  // namespace pipec::train

#include "runtime/train/dnnl/dense.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/weighted_layer.h"

namespace pipec::train {

struct DenseOp::State {
  std::unique_ptr<WeightedLayer> layer;
};

std::string DenseDesc::to_string() const {
  std::string s = fmt::format("dense [{}, {}] -> {}", rows, in, out);
  if (activation.kind != ActivationKind::None) s += " + " + activation.name();
  return s;
}

DenseOp::DenseOp(CpuKernels& kernels, const DenseDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.rows < 1 || d.in < 1 || d.out < 1) fail(what, "every size must be at least 1");
  const Dims x_dims{d.rows, d.in}, w_dims{d.out, d.in}, y_dims{d.rows, d.out};
  check_tensor_sizes(what, {{"input", x_dims}, {"kernel", w_dims}, {"output", y_dims}});
  OpContext ctx(kernels, what);
  const std::string key = fmt::format("dense {} {} layout {} bf16 {}", what, d.bias,
                                      int(kernels.options().activation_layout), kernels.options().bf16);
  std::shared_ptr<WeightedPrimitives> prims = ctx.primitives<WeightedPrimitives>(key, [&] {
    using namespace dnnl;
    const dnnl::engine& e = ctx.engine();
    const WeightedDescs m =
        weighted_descs(kernels, x_dims, w_dims, y_dims, d.bias ? d.out : 0, activation_tag(kernels, 2));
    inner_product_forward::primitive_desc fwd(
        inner_product_forward::desc(prop_kind::forward_training, m.x_in, m.w_in, m.b, m.y_out),
        activation_attr(d.activation), e);
    inner_product_backward_data::primitive_desc bd(inner_product_backward_data::desc(m.x_out, m.w_in, m.y_in),
                                                   user_scratchpad_attr(), e, fwd);
    inner_product_backward_weights::primitive_desc bw(
        inner_product_backward_weights::desc(m.x_in, m.w_out, m.b, m.y_in), user_scratchpad_attr(), e, fwd);
    return make_weighted<inner_product_forward, inner_product_backward_data, inner_product_backward_weights>(
        fwd, bd, bw, d.bias);
  });
  // Keras' [in, out] kernel is oneDNN's (out, in) weights stored input-major: tag io.
  const UserLayouts user = user_layouts(kernels, x_dims, memory::format_tag::nc, w_dims, memory::format_tag::io, y_dims,
                                        memory::format_tag::nc, d.bf16_x, d.bf16_dy);
  state_->layer = std::make_unique<WeightedLayer>(std::move(ctx), prims, user, d.out);
}

DenseOp::~DenseOp() = default;
DenseOp::DenseOp(DenseOp&&) noexcept = default;

void DenseOp::forward(const float* x, const float* w, const float* b, float* y) { state_->layer->forward(x, w, b, y); }

void DenseOp::backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
  state_->layer->backward(x, w, dy, dx, dw, db);
}

KernelMemory DenseOp::owned_memory() const { return state_->layer->owned_memory(); }

std::string DenseOp::implementation_forward() const { return state_->layer->primitives().impl_forward; }
std::string DenseOp::implementation_backward_data() const { return state_->layer->primitives().impl_backward_data; }
std::string DenseOp::implementation_backward_weights() const {
  return state_->layer->primitives().impl_backward_weights;
}

}  // namespace pipec::train

#include "runtime/train/dnnl/upsample2d.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

struct Upsample2dOp::State {
  explicit State(OpContext c) : ctx(std::move(c)) {}
  OpContext ctx;
  std::shared_ptr<ForwardBackward> prims;
  memory x, y;  // the caller's buffers (bound per call)
};

std::string Upsample2dDesc::to_string() const {
  return fmt::format("upsample2d {} [{}, {}, {}, {}] to {}x{}", bilinear ? "bilinear" : "nearest", batch, height, width,
                     channels, out_h, out_w);
}

Upsample2dOp::Upsample2dOp(CpuKernels& kernels, const Upsample2dDesc& d) : desc_(d) {
  const std::string what = d.to_string();
  if (d.batch < 1 || d.height < 1 || d.width < 1 || d.channels < 1 || d.out_h < 1 || d.out_w < 1)
    fail(what, "every size must be at least 1");
  const Dims x_dims{d.batch, d.channels, d.height, d.width};
  const Dims y_dims{d.batch, d.channels, d.out_h, d.out_w};
  check_tensor_sizes(what, {{"input", x_dims}, {"output", y_dims}});
  state_ = std::make_unique<State>(OpContext(kernels, what));
  State& st = *state_;
  // Memory-bound: the caller's NHWC directly. oneDNN maps output pixel o to input (o + 0.5) * in / out -
  // 0.5, rounded (nearest: for whole factors o / size) or interpolated with the edges clamped (linear),
  // which is TensorFlow's half-pixel resize.
  const memory::desc x = f32_desc(x_dims, memory::format_tag::nhwc), y = f32_desc(y_dims, memory::format_tag::nhwc);
  st.prims = st.ctx.primitives<ForwardBackward>(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = st.ctx.engine();
    const algorithm alg = d.bilinear ? algorithm::resampling_linear : algorithm::resampling_nearest;
    resampling_forward::primitive_desc fwd(resampling_forward::desc(prop_kind::forward_training, alg, x, y),
                                           user_scratchpad_attr(), e);
    resampling_backward::primitive_desc bwd(resampling_backward::desc(alg, x, y), user_scratchpad_attr(), e, fwd);
    return make_forward_backward<resampling_forward, resampling_backward>(fwd, bwd);
  });
  st.ctx.prepare([&] {
    st.x = st.ctx.caller_memory(x);
    st.y = st.ctx.caller_memory(y);
  });
  kernels.impl().scratchpad.need(st.prims->scratchpad);
}

Upsample2dOp::~Upsample2dOp() = default;
Upsample2dOp::Upsample2dOp(Upsample2dOp&&) noexcept = default;

void Upsample2dOp::forward(const float* x, float* y) {
  State& st = *state_;
  st.ctx.run(st.prims->forward, {{DNNL_ARG_SRC, st.x, x}, {DNNL_ARG_DST, st.y, y}});
}

void Upsample2dOp::backward(const float* dy, float* dx) {
  State& st = *state_;
  st.ctx.run(st.prims->backward, {{DNNL_ARG_DIFF_DST, st.y, dy}, {DNNL_ARG_DIFF_SRC, st.x, dx}});
}

std::string Upsample2dOp::implementation_forward() const { return state_->prims->impl_forward; }
std::string Upsample2dOp::implementation_backward() const { return state_->prims->impl_backward; }

}  // namespace pipec::train

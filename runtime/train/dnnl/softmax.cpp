#include "runtime/train/dnnl/softmax.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

struct SoftmaxOp::State {
  explicit State(OpContext c) : ctx(std::move(c)) {}
  OpContext ctx;
  std::shared_ptr<ForwardBackward> prims;
  memory x, y, dy, dx;  // the caller's buffers (bound per call)
};

std::string SoftmaxDesc::to_string() const { return fmt::format("softmax [{}, {}, {}] axis 1", outer, len, inner); }

SoftmaxOp::SoftmaxOp(CpuKernels& kernels, const SoftmaxDesc& d) : desc_(d) {
  const std::string what = d.to_string();
  if (d.outer < 1 || d.len < 1 || d.inner < 1) fail(what, "every size must be at least 1");
  const Dims dims{d.outer, d.len, d.inner};
  check_tensor_sizes(what, {{"input", dims}});
  state_ = std::make_unique<State>(OpContext(kernels, what));
  State& st = *state_;
  const memory::desc data = f32_desc(dims, memory::format_tag::abc);
  st.prims = st.ctx.primitives<ForwardBackward>(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = st.ctx.engine();
    softmax_forward::primitive_desc fwd(softmax_forward::desc(prop_kind::forward_training, data, 1),
                                        user_scratchpad_attr(), e);
    softmax_backward::primitive_desc bwd(softmax_backward::desc(data, data, 1), user_scratchpad_attr(), e, fwd);
    return make_forward_backward<softmax_forward, softmax_backward>(fwd, bwd);
  });
  st.ctx.prepare([&] {
    for (memory* m : {&st.x, &st.y, &st.dy, &st.dx}) *m = st.ctx.caller_memory(data);
  });
  kernels.impl().scratchpad.need(st.prims->scratchpad);
}

SoftmaxOp::~SoftmaxOp() = default;
SoftmaxOp::SoftmaxOp(SoftmaxOp&&) noexcept = default;

void SoftmaxOp::forward(const float* x, float* y) {
  State& st = *state_;
  st.ctx.run(st.prims->forward, {{DNNL_ARG_SRC, st.x, x}, {DNNL_ARG_DST, st.y, y}});
}

void SoftmaxOp::backward(const float* y, const float* dy, float* dx) {
  State& st = *state_;
  st.ctx.run(st.prims->backward,
             {{DNNL_ARG_DST, st.y, y}, {DNNL_ARG_DIFF_DST, st.dy, dy}, {DNNL_ARG_DIFF_SRC, st.dx, dx}});
}

std::string SoftmaxOp::implementation_forward() const { return state_->prims->impl_forward; }
std::string SoftmaxOp::implementation_backward() const { return state_->prims->impl_backward; }

}  // namespace pipec::train

#include "runtime/train/dnnl/eltwise.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

namespace {

struct EltwisePrimitives {
  dnnl::eltwise_forward forward;
  dnnl::eltwise_backward from_input, from_output;
  bool has_from_output = false;
  std::string impl_forward;
  size_t scratchpad = 0;  // the most bytes of scratchpad one of them needs
};

}  // namespace

struct EltwiseOp::State {
  explicit State(OpContext c) : ctx(std::move(c)) {}
  OpContext ctx;
  std::shared_ptr<EltwisePrimitives> prims;
  memory a, b, c;  // the caller's buffers (bound per call)
};

std::string EltwiseDesc::to_string() const { return fmt::format("{} x {}", activation.name(), count); }

EltwiseOp::EltwiseOp(CpuKernels& kernels, const EltwiseDesc& d) : desc_(d) {
  const std::string what = d.to_string();
  if (d.count < 1) fail(what, "the count must be at least 1");
  if (d.activation.kind == ActivationKind::None) fail(what, "no activation to apply");
  check_tensor_sizes(what, {{"input", {d.count}}});
  state_ = std::make_unique<State>(OpContext(kernels, what));
  State& st = *state_;
  const memory::desc data = f32_desc({d.count}, memory::format_tag::a);
  st.prims = st.ctx.primitives<EltwisePrimitives>("eltwise " + what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = st.ctx.engine();
    const float alpha = d.activation.alpha;
    auto p = std::make_shared<EltwisePrimitives>();
    algorithm alg = eltwise_algorithm(d.activation.kind, false);
    eltwise_forward::primitive_desc fwd(eltwise_forward::desc(prop_kind::forward_training, alg, data, alpha, 0.f),
                                        user_scratchpad_attr(), e);
    eltwise_backward::primitive_desc from_input(eltwise_backward::desc(alg, data, data, alpha, 0.f),
                                                user_scratchpad_attr(), e, fwd);
    p->forward = eltwise_forward(fwd);
    p->from_input = eltwise_backward(from_input);
    p->impl_forward = fwd.impl_info_str();
    p->scratchpad = std::max(fwd.scratchpad_desc().get_size(), from_input.scratchpad_desc().get_size());
    if (d.activation.derivative_from_output()) {
      // The hint must be a forward of the same (use_dst_for_bwd) algorithm.
      algorithm dst_alg = eltwise_algorithm(d.activation.kind, true);
      eltwise_forward::primitive_desc hint(
          eltwise_forward::desc(prop_kind::forward_training, dst_alg, data, alpha, 0.f), e);
      eltwise_backward::primitive_desc from_output(eltwise_backward::desc(dst_alg, data, data, alpha, 0.f),
                                                   user_scratchpad_attr(), e, hint);
      p->from_output = eltwise_backward(from_output);
      p->scratchpad = std::max(p->scratchpad, from_output.scratchpad_desc().get_size());
      p->has_from_output = true;
    }
    return p;
  });
  st.ctx.prepare([&] {
    for (memory* m : {&st.a, &st.b, &st.c}) *m = st.ctx.caller_memory(data);
  });
  kernels.impl().scratchpad.need(st.prims->scratchpad);
}

EltwiseOp::~EltwiseOp() = default;
EltwiseOp::EltwiseOp(EltwiseOp&&) noexcept = default;

void EltwiseOp::forward(const float* x, float* y) {
  State& st = *state_;
  st.ctx.run(st.prims->forward, {{DNNL_ARG_SRC, st.a, x}, {DNNL_ARG_DST, st.b, y}});
}

void EltwiseOp::backward_from_input(const float* x, const float* dy, float* dx) {
  State& st = *state_;
  st.ctx.run(st.prims->from_input,
             {{DNNL_ARG_SRC, st.a, x}, {DNNL_ARG_DIFF_DST, st.b, dy}, {DNNL_ARG_DIFF_SRC, st.c, dx}});
}

void EltwiseOp::backward_from_output(const float* y, const float* dy, float* dx) {
  State& st = *state_;
  if (!st.prims->has_from_output)
    fail(st.ctx.what(),
         "its derivative needs the input, not the output: keep the pre-activation and use backward_from_input");
  st.ctx.run(st.prims->from_output,
             {{DNNL_ARG_DST, st.a, y}, {DNNL_ARG_DIFF_DST, st.b, dy}, {DNNL_ARG_DIFF_SRC, st.c, dx}});
}

std::string EltwiseOp::implementation_forward() const { return state_->prims->impl_forward; }

}  // namespace pipec::train

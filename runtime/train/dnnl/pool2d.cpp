#include "runtime/train/dnnl/pool2d.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

struct Pool2dOp::State {
  explicit State(OpContext c) : ctx(std::move(c)) {}
  OpContext ctx;
  std::shared_ptr<ForwardBackward> prims;
  memory x, y;       // the caller's buffers (bound per call)
  memory workspace;  // owned (max pooling); empty when the primitive has none
};

std::string Pool2dDesc::to_string() const {
  return fmt::format("{} [{}, {}, {}, {}] size {}x{} stride {}x{} {}",
                     kind == PoolKind::Max ? "max_pool2d" : "avg_pool2d", batch, height, width, channels, size_h,
                     size_w, stride_h, stride_w, padding_name(padding));
}

Pool2dOp::Pool2dOp(CpuKernels& kernels, const Pool2dDesc& d) : desc_(d) {
  const std::string what = d.to_string();
  if (d.batch < 1 || d.height < 1 || d.width < 1 || d.channels < 1 || d.size_h < 1 || d.size_w < 1)
    fail(what, "every size must be at least 1");
  if (d.stride_h < 1 || d.stride_w < 1) fail(what, "strides must be at least 1");
  rows_ = window_dim(d.height, d.size_h, d.stride_h, 1, d.padding);
  cols_ = window_dim(d.width, d.size_w, d.stride_w, 1, d.padding);
  if (rows_.out < 1 || cols_.out < 1)
    fail(what, "the output is empty: the window is larger than the input with valid padding");

  const Dims x_dims{d.batch, d.channels, d.height, d.width};
  const Dims y_dims{d.batch, d.channels, rows_.out, cols_.out};
  check_tensor_sizes(what, {{"input", x_dims}, {"output", y_dims}});
  state_ = std::make_unique<State>(OpContext(kernels, what));
  State& st = *state_;
  // Memory-bound: the primitive works on the caller's NHWC directly (no reorders).
  const memory::desc x = f32_desc(x_dims, memory::format_tag::nhwc), y = f32_desc(y_dims, memory::format_tag::nhwc);
  st.prims = st.ctx.primitives<ForwardBackward>(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = st.ctx.engine();
    algorithm alg = d.kind == PoolKind::Max ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
    const Dims strides{d.stride_h, d.stride_w}, kernel{d.size_h, d.size_w};
    const Dims pad_l{rows_.pad_before, cols_.pad_before}, pad_r{rows_.pad_after, cols_.pad_after};
    pooling_forward::primitive_desc fwd(
        pooling_forward::desc(prop_kind::forward_training, alg, x, y, strides, kernel, pad_l, pad_r),
        user_scratchpad_attr(), e);
    pooling_backward::primitive_desc bwd(pooling_backward::desc(alg, x, y, strides, kernel, pad_l, pad_r),
                                         user_scratchpad_attr(), e, fwd);
    return make_forward_backward<pooling_forward, pooling_backward>(fwd, bwd);
  });
  st.ctx.prepare([&] {
    st.x = st.ctx.caller_memory(x);
    st.y = st.ctx.caller_memory(y);
    if (st.prims->workspace.get_size() > 0) st.workspace = memory(st.prims->workspace, st.ctx.engine());
  });
  kernels.impl().scratchpad.need(st.prims->scratchpad);
}

Pool2dOp::~Pool2dOp() = default;
Pool2dOp::Pool2dOp(Pool2dOp&&) noexcept = default;

void Pool2dOp::forward(const float* x, float* y) {
  State& st = *state_;
  st.ctx.run(st.prims->forward, {{DNNL_ARG_SRC, st.x, x}, {DNNL_ARG_DST, st.y, y}, {DNNL_ARG_WORKSPACE, st.workspace}});
}

void Pool2dOp::backward(const float* dy, float* dx) {
  State& st = *state_;
  st.ctx.run(st.prims->backward,
             {{DNNL_ARG_DIFF_DST, st.y, dy}, {DNNL_ARG_DIFF_SRC, st.x, dx}, {DNNL_ARG_WORKSPACE, st.workspace}});
}

KernelMemory Pool2dOp::owned_memory() const {
  KernelMemory m;
  if (state_->workspace) m.workspaces = static_cast<int64_t>(state_->workspace.get_desc().get_size());
  return m;
}

std::string Pool2dOp::implementation_forward() const { return state_->prims->impl_forward; }
std::string Pool2dOp::implementation_backward() const { return state_->prims->impl_backward; }

}  // namespace pipec::train

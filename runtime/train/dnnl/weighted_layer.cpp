#include "runtime/train/dnnl/weighted_layer.h"

#include <stdexcept>

namespace pipec::train {

WeightedDescs weighted_descs(const CpuKernels& k, const Dims& x, const Dims& w, const Dims& y, int64_t bias_size,
                             memory::format_tag act) {
  using dt = memory::data_type;
  const dt read = k.options().bf16 ? dt::bf16 : dt::f32;
  WeightedDescs d;
  d.x_in = memory::desc(x, read, act);
  d.x_out = memory::desc(x, dt::f32, act);
  d.w_in = memory::desc(w, read, memory::format_tag::any);
  d.w_out = memory::desc(w, dt::f32, memory::format_tag::any);
  if (bias_size > 0) d.b = memory::desc({bias_size}, dt::f32, memory::format_tag::x);
  d.y_in = memory::desc(y, read, act);
  d.y_out = memory::desc(y, dt::f32, act);
  return d;
}

UserLayouts user_layouts(const CpuKernels& k, const Dims& x, memory::format_tag x_tag, const Dims& w,
                         memory::format_tag w_tag, const Dims& y, memory::format_tag y_tag, bool bf16_x, bool bf16_dy) {
  if ((bf16_x || bf16_dy) && !k.options().bf16)
    throw std::logic_error("a layer reading bf16 operands needs bf16 kernels (CpuKernelOptions::bf16)");
  using dt = memory::data_type;
  UserLayouts u{f32_desc(x, x_tag), f32_desc(w, w_tag), f32_desc(y, y_tag), {}, {}};
  u.x_read = bf16_x ? memory::desc(x, dt::bf16, x_tag) : u.x;
  u.y_read = bf16_dy ? memory::desc(y, dt::bf16, y_tag) : u.y;
  return u;
}

WeightedLayer::WeightedLayer(OpContext ctx, std::shared_ptr<WeightedPrimitives> prims, const UserLayouts& user,
                             int64_t bias_size)
    : ctx_(std::move(ctx)), prims_(std::move(prims)) {
  CpuKernels::Impl& k = ctx_.kernels().impl();
  const WeightedPrimitives& p = *prims_;
  memory::desc bias = f32_desc({bias_size}, memory::format_tag::x);
  // Activations in a primitive's own layout (Winograd's blocked ones) are staged in the kernels' two
  // shared buffers, except the forward's x, which the backward-weights call reuses when it wants the same
  // layout (one reorder fewer per step, for one x-sized buffer per layer). In backward(), dy stays in
  // slot 1 for both backward calls; dx is written back before x takes slot 0.
  // The shared slots' sizes are planned for the buffers backward() will use: x_bw_ and dy_bw_ not when
  // the forward's x and backward-data's dy serve (a layer without dx reorders dy into dy_bw_ instead,
  // the same size).
  ctx_.prepare([&] {
    x_fwd_.init(user.x_read, p.fwd_src, k);
    w_fwd_.init(user.w, p.fwd_weights, k);
    if (p.bias) b_fwd_.init(bias, p.fwd_bias, k);
    y_fwd_.init(user.y, p.fwd_dst, k, true, 0);
    dy_bd_.init(user.y_read, p.bd_diff_dst, k, true, 1);
    w_bd_.init(user.w, p.bd_weights, k);
    dx_bd_.init(user.x, p.bd_diff_src, k, true, 0);
    x_bw_.init(user.x_read, p.bw_src, k, true, 0, !(x_fwd_.reorders() && p.fwd_src == p.bw_src));
    dy_bw_.init(user.y_read, p.bw_diff_dst, k, true, 1, !(dy_bd_.reorders() && p.bd_diff_dst == p.bw_diff_dst));
    dw_bw_.init(user.w, p.bw_diff_weights, k);
    if (p.bias) db_bw_.init(bias, p.bw_diff_bias, k);
  });
  k.scratchpad.need(p.scratchpad);
}

KernelMemory WeightedLayer::owned_memory() const {
  const WeightedPrimitives& p = *prims_;
  KernelMemory m;
  // Backward-data reads the forward's reordered weights when it wants their layout (w_bd_ stays unused).
  const size_t w_bd = p.bd_weights == p.fwd_weights ? 0 : w_bd_.owned_bytes();
  m.weights = static_cast<int64_t>(w_fwd_.owned_bytes() + w_bd + dw_bw_.owned_bytes() + b_fwd_.owned_bytes() +
                                   db_bw_.owned_bytes());
  m.activations = static_cast<int64_t>(x_fwd_.owned_bytes());
  return m;
}

void WeightedLayer::forward(const float* x, const float* w, const float* b, float* y) {
  if (prims_->bias && b == nullptr) fail(ctx_.what(), "forward needs the bias");
  ctx_.call([&](dnnl::stream& s) {
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, x_fwd_.input(x, s)},
        {DNNL_ARG_WEIGHTS, w_fwd_.input_cached(w, ctx_.kernels().weights_generation(), s)},
        {DNNL_ARG_DST, y_fwd_.output(y)},
    };
    if (prims_->bias) args[DNNL_ARG_BIAS] = b_fwd_.input(b, s);
    if (const memory& scratch = ctx_.scratchpad()) args[DNNL_ARG_SCRATCHPAD] = scratch;
    prims_->forward.execute(s, args);
    y_fwd_.output_done(y, s);
  });
  last_forward_x_ = x;
}

void WeightedLayer::backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
  const WeightedPrimitives& p = *prims_;
  if (p.bias && db == nullptr) fail(ctx_.what(), "backward needs a bias gradient buffer");
  if (dw == nullptr) fail(ctx_.what(), "backward needs a weight gradient buffer");
  ctx_.call([&](dnnl::stream& s) {
    memory dy_for_bd;
    if (dx != nullptr) {
      dy_for_bd = dy_bd_.input(dy, s);
      // Backward-data may want the forward's weight layout (dense often does): then the forward's
      // reordered copy serves both.
      const uint64_t generation = ctx_.kernels().weights_generation();
      memory weights =
          p.bd_weights == p.fwd_weights ? w_fwd_.input_cached(w, generation, s) : w_bd_.input_cached(w, generation, s);
      std::unordered_map<int, memory> bd_args{
          {DNNL_ARG_DIFF_DST, dy_for_bd}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, dx_bd_.output(dx)}};
      if (const memory& scratch = ctx_.scratchpad()) bd_args[DNNL_ARG_SCRATCHPAD] = scratch;
      p.backward_data.execute(s, bd_args);
      dx_bd_.output_done(dx, s);
    }
    // dy and x are reordered once when both backward primitives (or the forward) want the same layout.
    memory dy_for_bw =
        dx != nullptr && dy_bd_.reorders() && p.bd_diff_dst == p.bw_diff_dst ? dy_for_bd : dy_bw_.input(dy, s);
    memory x_for_bw =
        x == last_forward_x_ && x_fwd_.reorders() && p.fwd_src == p.bw_src ? x_fwd_.staged() : x_bw_.input(x, s);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, x_for_bw}, {DNNL_ARG_DIFF_DST, dy_for_bw}, {DNNL_ARG_DIFF_WEIGHTS, dw_bw_.output(dw)}};
    if (p.bias) args[DNNL_ARG_DIFF_BIAS] = db_bw_.output(db);
    if (const memory& scratch = ctx_.scratchpad()) args[DNNL_ARG_SCRATCHPAD] = scratch;
    p.backward_weights.execute(s, args);
    dw_bw_.output_done(dw, s);
    if (p.bias) db_bw_.output_done(db, s);
  });
}

}  // namespace pipec::train

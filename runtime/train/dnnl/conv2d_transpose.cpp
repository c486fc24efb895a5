#include "runtime/train/dnnl/conv2d_transpose.h"

#include <vector>

#include <fmt/format.h>

#include "runtime/train/dnnl/reached_region.h"
#include "runtime/train/dnnl/weighted_layer.h"

namespace pipec::train {

struct Conv2dTransposeOp::State {
  std::unique_ptr<WeightedLayer> layer;
  // The output's rows and columns the windows reach (reached_region.h): all of them unless the kernel
  // is smaller than the stride (TensorFlow's last rows or columns then get no window), when y and dy
  // go through the buffers below. The primitives never see a negative padding.
  ImageCorner reached;
  std::vector<float> y, dy;
};

std::string Conv2dTransposeDesc::to_string() const {
  std::string s = fmt::format("conv2d_transpose [{}, {}, {}, {}] -> {} kernel {}x{}", batch, height, width, in_channels,
                              filters, kernel_h, kernel_w);
  if (stride_h != 1 || stride_w != 1) s += fmt::format(" stride {}x{}", stride_h, stride_w);
  s += padding == Padding::Same ? " same" : " valid";
  if (activation.kind != ActivationKind::None) s += " + " + activation.name();
  return s;
}

Conv2dTransposeOp::Conv2dTransposeOp(CpuKernels& kernels, const Conv2dTransposeDesc& d)
    : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.batch < 1 || d.height < 1 || d.width < 1 || d.in_channels < 1 || d.filters < 1 || d.kernel_h < 1 ||
      d.kernel_w < 1)
    fail(what, "every size must be at least 1");
  if (d.stride_h < 1 || d.stride_w < 1) fail(what, "strides must be at least 1");
  rows_ = transpose_dim(d.height, d.kernel_h, d.stride_h, d.padding);
  cols_ = transpose_dim(d.width, d.kernel_w, d.stride_w, d.padding);
  State& st = *state_;
  st.reached = {d.batch,
                rows_.out,
                cols_.out,
                d.filters,
                rows_.out + std::min<int64_t>(rows_.pad_after, 0),
                cols_.out + std::min<int64_t>(cols_.pad_after, 0)};
  if (!st.reached.whole()) {
    st.y.resize(static_cast<size_t>(st.reached.part_elements()));
    st.dy.resize(st.y.size());
  }

  const Dims x_dims{d.batch, d.in_channels, d.height, d.width};
  const Dims w_dims{d.filters, d.in_channels, d.kernel_h, d.kernel_w};
  const Dims y_dims{d.batch, d.filters, st.reached.part_h, st.reached.part_w};
  check_tensor_sizes(what, {{"input", x_dims}, {"kernel", w_dims}, {"output", y_dims}});
  const Dims strides{d.stride_h, d.stride_w};
  const Dims dilates{0, 0};
  const Dims pad_l{rows_.pad_before, cols_.pad_before};
  const Dims pad_r{std::max<int64_t>(rows_.pad_after, 0), std::max<int64_t>(cols_.pad_after, 0)};
  OpContext ctx(kernels, what);
  const std::string key = fmt::format("conv2d_transpose {} {} layout {} bf16 {}", what, d.bias,
                                      int(kernels.options().activation_layout), kernels.options().bf16);
  std::shared_ptr<WeightedPrimitives> prims = ctx.primitives<WeightedPrimitives>(key, [&] {
    using namespace dnnl;
    const dnnl::engine& e = ctx.engine();
    const WeightedDescs m =
        weighted_descs(kernels, x_dims, w_dims, y_dims, d.bias ? d.filters : 0, activation_tag(kernels, 4));
    const algorithm alg = algorithm::deconvolution_direct;
    auto fwd_d = deconvolution_forward::desc(prop_kind::forward_training, alg, m.x_in, m.w_in, m.b, m.y_out, strides,
                                             dilates, pad_l, pad_r);
    deconvolution_forward::primitive_desc fwd(fwd_d, activation_attr(d.activation), e);
    deconvolution_backward_data::primitive_desc bd(
        deconvolution_backward_data::desc(alg, m.x_out, m.w_in, m.y_in, strides, dilates, pad_l, pad_r),
        user_scratchpad_attr(), e, fwd);
    deconvolution_backward_weights::primitive_desc bw(
        deconvolution_backward_weights::desc(alg, m.x_in, m.w_out, m.b, m.y_in, strides, dilates, pad_l, pad_r),
        user_scratchpad_attr(), e, fwd);
    return make_weighted<deconvolution_forward, deconvolution_backward_data, deconvolution_backward_weights>(
        fwd, bd, bw, d.bias);
  });
  // HWOI: dims are (O, I, H, W); memory runs H, W, O, I.
  const int64_t O = d.filters, I = d.in_channels, KW = d.kernel_w;
  memory::desc w_user = f32_strided(w_dims, {I, 1, KW * O * I, O * I});
  const memory::desc x_user = f32_desc(x_dims, memory::format_tag::nhwc),
                     y_user = f32_desc(y_dims, memory::format_tag::nhwc);
  UserLayouts user{x_user, w_user, y_user, x_user, y_user};  // reads f32 (its op takes the unreached dy itself)
  state_->layer = std::make_unique<WeightedLayer>(std::move(ctx), prims, user, d.filters);
}

Conv2dTransposeOp::~Conv2dTransposeOp() = default;
Conv2dTransposeOp::Conv2dTransposeOp(Conv2dTransposeOp&&) noexcept = default;

void Conv2dTransposeOp::forward(const float* x, const float* w, const float* b, float* y) {
  State& st = *state_;
  if (st.reached.whole()) return st.layer->forward(x, w, b, y);
  st.layer->forward(x, w, b, st.y.data());
  st.reached.put(st.y.data(), y, [&](int64_t c) { return desc_.activation.apply(b ? b[c] : 0.0f); });
}

void Conv2dTransposeOp::backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
  State& st = *state_;
  if (st.reached.whole()) return st.layer->backward(x, w, dy, dx, dw, db);
  st.reached.take(dy, st.dy.data());
  st.layer->backward(x, w, st.dy.data(), dx, dw, db);
  if (!db) return;
  std::vector<double> outside(static_cast<size_t>(desc_.filters), 0.0);
  st.reached.add_outside(dy, outside);
  for (int64_t c = 0; c < desc_.filters; ++c) db[c] = static_cast<float>(db[c] + outside[static_cast<size_t>(c)]);
}

KernelMemory Conv2dTransposeOp::owned_memory() const {
  KernelMemory m = state_->layer->owned_memory();
  m.activations += static_cast<int64_t>((state_->y.size() + state_->dy.size()) * sizeof(float));
  return m;
}

std::string Conv2dTransposeOp::implementation_forward() const { return state_->layer->primitives().impl_forward; }
std::string Conv2dTransposeOp::implementation_backward_data() const {
  return state_->layer->primitives().impl_backward_data;
}
std::string Conv2dTransposeOp::implementation_backward_weights() const {
  return state_->layer->primitives().impl_backward_weights;
}

}  // namespace pipec::train

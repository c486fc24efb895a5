#include "runtime/train/dnnl/conv2d_transpose.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "runtime/train/dnnl/weighted_layer.h"

namespace pipec::train {

// oneDNN 2.6 takes a negative right padding (kernel < stride: TensorFlow's last output rows or columns get
// no window), but its 1x1 backward-weights kernel then writes past a buffer of its own and the kernel
// gradient comes out wrong (tests/train_difftest found it; valgrind shows the write). So the primitives
// cover only the rows and columns that windows reach, with no negative padding, and the op fills in the
// rest: the bias alone, activated, forward; their dy only in the bias gradient, backward.
struct Conv2dTransposeOp::State {
  std::unique_ptr<WeightedLayer> layer;
  int64_t covered_h = 0, covered_w = 0;  // the output rows and columns windows reach
  bool uncovered = false;                // some are not: y and dy go through the buffers below
  std::vector<float> y, dy;              // [batch, covered_h, covered_w, filters]
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
  st.covered_h = rows_.out + std::min<int64_t>(rows_.pad_after, 0);
  st.covered_w = cols_.out + std::min<int64_t>(cols_.pad_after, 0);
  st.uncovered = st.covered_h < rows_.out || st.covered_w < cols_.out;
  if (st.uncovered) {
    st.y.resize(static_cast<size_t>(d.batch * st.covered_h * st.covered_w * d.filters));
    st.dy.resize(st.y.size());
  }

  const int threads = kernels.threads();
  const Dims x_dims{d.batch, d.in_channels, d.height, d.width};
  const Dims w_dims{d.filters, d.in_channels, d.kernel_h, d.kernel_w};
  const Dims y_dims{d.batch, d.filters, st.covered_h, st.covered_w};
  check_tensor_sizes(what, {{"input", x_dims}, {"kernel", w_dims}, {"output", y_dims}});
  const Dims strides{d.stride_h, d.stride_w};
  const Dims dilates{0, 0};
  const Dims pad_l{rows_.pad_before, cols_.pad_before};
  const Dims pad_r{std::max<int64_t>(rows_.pad_after, 0), std::max<int64_t>(cols_.pad_after, 0)};
  const std::string key = fmt::format("conv2d_transpose {} {} threads {} layout {}", what, d.bias, threads,
                                      int(kernels.options().activation_layout));

  std::shared_ptr<WeightedPrimitives> prims;
  ThreadScope scope(threads);
  with_errors(what, [&] {
    prims = kernels.impl().cached<WeightedPrimitives>(key, [&] {
      using namespace dnnl;
      const dnnl::engine& e = kernels.impl().engine;
      auto act = activation_tag(kernels, 4);
      memory::desc x = f32_desc(x_dims, act), y = f32_desc(y_dims, act);
      memory::desc w = f32_desc(w_dims, memory::format_tag::any);
      memory::desc b = d.bias ? f32_desc({d.filters}, memory::format_tag::x) : memory::desc();
      auto fwd_d = deconvolution_forward::desc(prop_kind::forward_training, algorithm::deconvolution_direct, x, w, b, y,
                                               strides, dilates, pad_l, pad_r);
      deconvolution_forward::primitive_desc fwd(fwd_d, activation_attr(d.activation), e);
      deconvolution_backward_data::primitive_desc bd(
          deconvolution_backward_data::desc(algorithm::deconvolution_direct, x, w, y, strides, dilates, pad_l, pad_r),
          e, fwd);
      deconvolution_backward_weights::primitive_desc bw(
          deconvolution_backward_weights::desc(algorithm::deconvolution_direct, x, w, b, y, strides, dilates, pad_l,
                                               pad_r),
          e, fwd);
      return make_weighted<deconvolution_forward, deconvolution_backward_data, deconvolution_backward_weights>(
          fwd, bd, bw, d.bias);
    });
  });
  // HWOI: dims are (O, I, H, W); memory runs H, W, O, I.
  const int64_t O = d.filters, I = d.in_channels, KW = d.kernel_w;
  memory::desc w_user = f32_strided(w_dims, {I, 1, KW * O * I, O * I});
  UserLayouts user{f32_desc(x_dims, memory::format_tag::nhwc), w_user, f32_desc(y_dims, memory::format_tag::nhwc)};
  state_->layer = std::make_unique<WeightedLayer>(kernels, prims, user, d.filters, threads, what);
}

Conv2dTransposeOp::~Conv2dTransposeOp() = default;
Conv2dTransposeOp::Conv2dTransposeOp(Conv2dTransposeOp&&) noexcept = default;

void Conv2dTransposeOp::forward(const float* x, const float* w, const float* b, float* y) {
  State& st = *state_;
  if (!st.uncovered) return st.layer->forward(x, w, b, y);
  st.layer->forward(x, w, b, st.y.data());
  const int64_t f = desc_.filters;
  for (int64_t n = 0; n < desc_.batch; ++n)
    for (int64_t oy = 0; oy < rows_.out; ++oy)
      for (int64_t ox = 0; ox < cols_.out; ++ox) {
        float* out = y + ((n * rows_.out + oy) * cols_.out + ox) * f;
        if (oy < st.covered_h && ox < st.covered_w) {
          const float* in = st.y.data() + ((n * st.covered_h + oy) * st.covered_w + ox) * f;
          std::copy(in, in + f, out);
        } else {
          for (int64_t c = 0; c < f; ++c) out[c] = desc_.activation.apply(b ? b[c] : 0.0f);
        }
      }
}

void Conv2dTransposeOp::backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
  State& st = *state_;
  if (!st.uncovered) return st.layer->backward(x, w, dy, dx, dw, db);
  const int64_t f = desc_.filters;
  std::vector<double> uncovered_sum(static_cast<size_t>(f), 0.0);
  for (int64_t n = 0; n < desc_.batch; ++n)
    for (int64_t oy = 0; oy < rows_.out; ++oy)
      for (int64_t ox = 0; ox < cols_.out; ++ox) {
        const float* in = dy + ((n * rows_.out + oy) * cols_.out + ox) * f;
        if (oy < st.covered_h && ox < st.covered_w) {
          std::copy(in, in + f, st.dy.data() + ((n * st.covered_h + oy) * st.covered_w + ox) * f);
        } else {
          for (int64_t c = 0; c < f; ++c) uncovered_sum[static_cast<size_t>(c)] += in[c];
        }
      }
  st.layer->backward(x, w, st.dy.data(), dx, dw, db);
  if (db)
    for (int64_t c = 0; c < f; ++c) db[c] = static_cast<float>(db[c] + uncovered_sum[static_cast<size_t>(c)]);
}

std::string Conv2dTransposeOp::implementation_forward() const { return state_->layer->primitives().impl_forward; }
std::string Conv2dTransposeOp::implementation_backward_data() const {
  return state_->layer->primitives().impl_backward_data;
}
std::string Conv2dTransposeOp::implementation_backward_weights() const {
  return state_->layer->primitives().impl_backward_weights;
}

}  // namespace pipec::train

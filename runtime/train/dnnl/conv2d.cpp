#include "runtime/train/dnnl/conv2d.h"

#include <fmt/format.h>

#include "runtime/core/half.h"
#include "runtime/train/dnnl/reached_region.h"
#include "runtime/train/dnnl/weighted_layer.h"

namespace pipec::train {

namespace {

// Winograd's F(4x4, 3x3) is for a 3x3 window at stride 1 without dilation, in f32 only (oneDNN 2.6 has
// no bf16 Winograd); oneDNN decides the rest (channels, the CPU's instruction set) by refusing the
// primitive.
bool winograd_candidate(const Conv2dDesc& d, const CpuKernelOptions& o) {
  return o.conv_algorithm == ConvAlgorithm::Auto && !o.bf16 && d.kernel_h == 3 && d.kernel_w == 3 && d.stride_h == 1 &&
         d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1;
}

// A 64-bit digest of `n` floats' bits: two runs' outputs compared without keeping a copy of either.
uint64_t digest(const float* data, int64_t n, uint64_t h) {
  if (data == nullptr) return h;
  const auto* words = reinterpret_cast<const uint32_t*>(data);
  for (int64_t i = 0; i < n; ++i) {
    h = (h ^ words[i]) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace

struct Conv2dOp::State {
  CpuKernels* kernels = nullptr;
  std::unique_ptr<WeightedLayer> layer;
  bool refused = false;  // Winograd did not repeat its results: the layer was remade direct
  // The input's rows and columns the windows reach (reached_region.h): all of them but for a stride
  // that leaves the last ones out, when x and dx go through the buffers below.
  ImageCorner reached;
  std::vector<float> x, dx;
  std::vector<float> wide;  // a bf16 x (Conv2dDesc::bf16_x) widened, before the region is taken
  // x as take() reads it: f32.
  const float* f32_x(const float* x, bool bf16) {
    if (!bf16) return x;
    wide.resize(static_cast<size_t>(reached.batch * reached.height * reached.width * reached.channels));
    const auto* bits = reinterpret_cast<const uint16_t*>(x);
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = bf16_bits_to_float(bits[i]);
    return wide.data();
  }
};

std::string Conv2dDesc::to_string() const {
  std::string s = fmt::format("conv2d [{}, {}, {}, {}] -> {} kernel {}x{}", batch, height, width, in_channels, filters,
                              kernel_h, kernel_w);
  if (stride_h != 1 || stride_w != 1) s += fmt::format(" stride {}x{}", stride_h, stride_w);
  if (dilation_h != 1 || dilation_w != 1) s += fmt::format(" dilation {}x{}", dilation_h, dilation_w);
  s += padding == Padding::Same ? " same" : " valid";
  if (activation.kind != ActivationKind::None) s += " + " + activation.name();
  return s;
}

Conv2dOp::Conv2dOp(CpuKernels& kernels, const Conv2dDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.batch < 1 || d.height < 1 || d.width < 1 || d.in_channels < 1 || d.filters < 1 || d.kernel_h < 1 ||
      d.kernel_w < 1)
    fail(what, "every size must be at least 1");
  if (d.stride_h < 1 || d.stride_w < 1 || d.dilation_h < 1 || d.dilation_w < 1)
    fail(what, "strides and dilations must be at least 1");
  rows_ = window_dim(d.height, d.kernel_h, d.stride_h, d.dilation_h, d.padding);
  cols_ = window_dim(d.width, d.kernel_w, d.stride_w, d.dilation_w, d.padding);
  if (rows_.out < 1 || cols_.out < 1)
    fail(what, "the output is empty: the window is larger than the input with valid padding");

  State& st = *state_;
  st.kernels = &kernels;
  st.reached = {d.batch,
                d.height,
                d.width,
                d.in_channels,
                reached_rows(d.height, rows_.out, d.stride_h, (d.kernel_h - 1) * d.dilation_h + 1, rows_.pad_before),
                reached_rows(d.width, cols_.out, d.stride_w, (d.kernel_w - 1) * d.dilation_w + 1, cols_.pad_before)};
  if (!st.reached.whole()) {
    st.x.resize(static_cast<size_t>(st.reached.part_elements()));
    st.dx.resize(st.x.size());
  }
  check_tensor_sizes(what, {{"input", {d.batch, d.in_channels, st.reached.part_h, st.reached.part_w}},
                            {"kernel", {d.filters, d.in_channels, d.kernel_h, d.kernel_w}},
                            {"output", {d.batch, d.filters, rows_.out, cols_.out}}});
  make_layer(winograd_candidate(d, kernels.options()));
  // A shape another layer found not to repeat under Winograd goes direct at once.
  const WeightedPrimitives& p = st.layer->primitives();
  if (winograd() &&
      (p.forward_repeats == WeightedPrimitives::Repeats::No || p.backward_repeats == WeightedPrimitives::Repeats::No))
    refuse_winograd();
}

void Conv2dOp::make_layer(bool try_winograd) {
  const Conv2dDesc& d = desc_;
  State& st = *state_;
  CpuKernels& kernels = *st.kernels;
  const std::string what = d.to_string();
  const Dims x_dims{d.batch, d.in_channels, st.reached.part_h, st.reached.part_w};
  const Dims w_dims{d.filters, d.in_channels, d.kernel_h, d.kernel_w};
  const Dims y_dims{d.batch, d.filters, rows_.out, cols_.out};
  const Dims strides{d.stride_h, d.stride_w};
  const Dims dilates{d.dilation_h - 1, d.dilation_w - 1};  // oneDNN counts the gaps
  const Dims pad_l{rows_.pad_before, cols_.pad_before};
  const Dims pad_r{rows_.pad_after, cols_.pad_after};
  OpContext ctx(kernels, what);
  // The key names the algorithm tried: a shape refused Winograd shares the set of `--conv direct`.
  const ConvAlgorithm tried = try_winograd ? kernels.options().conv_algorithm : ConvAlgorithm::Direct;
  const std::string key =
      fmt::format("conv2d {} {} {} layout {} {} bf16 {}", what, d.bias, d.activation.alpha,
                  int(kernels.options().activation_layout), conv_algorithm_name(tried), kernels.options().bf16);
  std::shared_ptr<WeightedPrimitives> prims = ctx.primitives<WeightedPrimitives>(key, [&] {
    using namespace dnnl;
    const dnnl::engine& e = ctx.engine();
    auto make = [&](algorithm alg, memory::format_tag act) {
      const WeightedDescs m = weighted_descs(kernels, x_dims, w_dims, y_dims, d.bias ? d.filters : 0, act);
      auto fwd_d = convolution_forward::desc(prop_kind::forward_training, alg, m.x_in, m.w_in, m.b, m.y_out, strides,
                                             dilates, pad_l, pad_r);
      convolution_forward::primitive_desc fwd(fwd_d, activation_attr(d.activation), e);
      // Backward primitives get their own `any` layouts, with the forward only as a hint: forcing the
      // forward's blocked weights on backward-data selects oneDNN's reference kernel.
      convolution_backward_data::primitive_desc bd(
          convolution_backward_data::desc(alg, m.x_out, m.w_in, m.y_in, strides, dilates, pad_l, pad_r),
          user_scratchpad_attr(), e, fwd);
      convolution_backward_weights::primitive_desc bw(
          convolution_backward_weights::desc(alg, m.x_in, m.w_out, m.b, m.y_in, strides, dilates, pad_l, pad_r),
          user_scratchpad_attr(), e, fwd);
      return make_weighted<convolution_forward, convolution_backward_data, convolution_backward_weights>(fwd, bd, bw,
                                                                                                         d.bias);
    };
    // Winograd works on oneDNN's blocked layouts only: the activations are reordered from NHWC around
    // each call, which costs less than the multiplies it saves. oneDNN refuses the shapes (and CPUs) it
    // has no Winograd kernel for; those take the direct algorithm.
    if (try_winograd) {
      try {
        return make(algorithm::convolution_winograd, memory::format_tag::any);
      } catch (const dnnl::error&) {
      }
    }
    return make(algorithm::convolution_direct, activation_tag(kernels, 4));
  });
  // Where the windows leave rows out, x goes through st.x (f32, widened from bf16 first).
  const UserLayouts user = user_layouts(kernels, x_dims, memory::format_tag::nhwc, w_dims, memory::format_tag::hwio,
                                        y_dims, memory::format_tag::nhwc, d.bf16_x && st.reached.whole(), d.bf16_dy);
  st.layer.reset();  // a refused layer's buffers go before the direct one's are made
  st.layer = std::make_unique<WeightedLayer>(std::move(ctx), prims, user, d.filters);
}

void Conv2dOp::refuse_winograd() {
  state_->refused = true;
  make_layer(false);
}

bool Conv2dOp::winograd_refused() const { return state_->refused; }

Conv2dOp::~Conv2dOp() = default;
Conv2dOp::Conv2dOp(Conv2dOp&&) noexcept = default;

// The first call of a Winograd layer (forward, then backward) runs twice, the weights reordered again for
// the second, and compares digests of what it wrote (ConvAlgorithm): a shape whose two runs differ is
// remade direct and the call made again.
template <class Call>
void Conv2dOp::checked(bool forward, const Call& call,
                       std::initializer_list<std::pair<const float*, int64_t>> outputs) {
  State& st = *state_;
  using Repeats = WeightedPrimitives::Repeats;
  Repeats* verdict = nullptr;
  if (winograd()) {
    WeightedPrimitives& p = st.layer->primitives();
    verdict = forward ? &p.forward_repeats : &p.backward_repeats;
  }
  if (verdict == nullptr || *verdict == Repeats::Yes) return call();
  if (*verdict == Repeats::Unknown) {
    auto run_digest = [&] {
      call();
      uint64_t h = 0xcbf29ce484222325ull;
      for (const auto& [data, n] : outputs) h = digest(data, n, h);
      return h;
    };
    const uint64_t first = run_digest();
    st.layer->forget_cached_weights();
    const uint64_t second = run_digest();
    const bool same = first == second && !st.kernels->options().winograd_differs_for_testing;
    *verdict = same ? Repeats::Yes : Repeats::No;
    if (same) return;
  }
  refuse_winograd();
  call();
}

void Conv2dOp::forward(const float* x, const float* w, const float* b, float* y) {
  State& st = *state_;
  const int64_t y_elements = desc_.batch * rows_.out * cols_.out * desc_.filters;
  checked(true,
          [&] {
            if (st.reached.whole()) return st.layer->forward(x, w, b, y);
            st.reached.take(st.f32_x(x, desc_.bf16_x), st.x.data());
            st.layer->forward(st.x.data(), w, b, y);
          },
          {{y, y_elements}});
}

void Conv2dOp::backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
  State& st = *state_;
  const int64_t x_elements = desc_.batch * desc_.height * desc_.width * desc_.in_channels;
  const int64_t w_elements = desc_.kernel_h * desc_.kernel_w * desc_.in_channels * desc_.filters;
  checked(false,
          [&] {
            if (st.reached.whole()) return st.layer->backward(x, w, dy, dx, dw, db);
            st.reached.take(st.f32_x(x, desc_.bf16_x), st.x.data());
            st.layer->backward(st.x.data(), w, dy, dx ? st.dx.data() : nullptr, dw, db);
            if (dx) st.reached.put(st.dx.data(), dx, [](int64_t) { return 0.0f; });
          },
          {{dx, x_elements}, {dw, w_elements}, {db, db ? desc_.filters : 0}});
}

KernelMemory Conv2dOp::owned_memory() const {
  KernelMemory m = state_->layer->owned_memory();
  m.activations += static_cast<int64_t>((state_->x.size() + state_->dx.size()) * sizeof(float));
  return m;
}

std::string Conv2dOp::implementation_forward() const { return state_->layer->primitives().impl_forward; }
std::string Conv2dOp::implementation_backward_data() const { return state_->layer->primitives().impl_backward_data; }
std::string Conv2dOp::implementation_backward_weights() const {
  return state_->layer->primitives().impl_backward_weights;
}

}  // namespace pipec::train

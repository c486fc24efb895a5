#include "runtime/train/dnnl/upsample2d.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

namespace {

struct ResamplePrimitives {
  dnnl::resampling_forward forward;
  dnnl::resampling_backward backward;
  std::string impl_forward, impl_backward;
};

}  // namespace

struct Upsample2dOp::State {
  std::shared_ptr<ResamplePrimitives> prims;
  dnnl::stream* stream = nullptr;
  int threads = 0;
  std::string what;
  memory x, y;  // the caller's buffers (handles set per call)
};

std::string Upsample2dDesc::to_string() const {
  return fmt::format("upsample2d {} [{}, {}, {}, {}] to {}x{}", bilinear ? "bilinear" : "nearest", batch, height, width,
                     channels, out_h, out_w);
}

Upsample2dOp::Upsample2dOp(CpuKernels& kernels, const Upsample2dDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.batch < 1 || d.height < 1 || d.width < 1 || d.channels < 1 || d.out_h < 1 || d.out_w < 1)
    fail(what, "every size must be at least 1");
  const Dims x_dims{d.batch, d.channels, d.height, d.width};
  const Dims y_dims{d.batch, d.channels, d.out_h, d.out_w};
  check_tensor_sizes(what, {{"input", x_dims}, {"output", y_dims}});
  State& st = *state_;
  st.stream = &kernels.impl().stream;
  st.threads = kernels.threads();
  st.what = what;
  const std::string key = fmt::format("{} threads {}", what, st.threads);
  ThreadScope scope(st.threads);
  with_errors(what, [&] {
    st.prims = kernels.impl().cached<ResamplePrimitives>(key, [&] {
      using namespace dnnl;
      const dnnl::engine& e = kernels.impl().engine;
      // Memory-bound: the caller's NHWC directly. oneDNN maps output pixel o to input (o + 0.5) * in /
      // out - 0.5, rounded (nearest: for whole factors o / size) or interpolated with the edges clamped
      // (linear), which is TensorFlow's half-pixel resize.
      memory::desc x = f32_desc(x_dims, memory::format_tag::nhwc), y = f32_desc(y_dims, memory::format_tag::nhwc);
      const algorithm alg = d.bilinear ? algorithm::resampling_linear : algorithm::resampling_nearest;
      resampling_forward::primitive_desc fwd(resampling_forward::desc(prop_kind::forward_training, alg, x, y), e);
      resampling_backward::primitive_desc bwd(resampling_backward::desc(alg, x, y), e, fwd);
      auto p = std::make_shared<ResamplePrimitives>();
      p->forward = resampling_forward(fwd);
      p->backward = resampling_backward(bwd);
      p->impl_forward = fwd.impl_info_str();
      p->impl_backward = bwd.impl_info_str();
      return p;
    });
    const dnnl::engine& e = kernels.impl().engine;
    st.x = memory(f32_desc(x_dims, memory::format_tag::nhwc), e, DNNL_MEMORY_NONE);
    st.y = memory(f32_desc(y_dims, memory::format_tag::nhwc), e, DNNL_MEMORY_NONE);
  });
}

Upsample2dOp::~Upsample2dOp() = default;
Upsample2dOp::Upsample2dOp(Upsample2dOp&&) noexcept = default;

void Upsample2dOp::forward(const float* x, float* y) {
  State& st = *state_;
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    dnnl::stream& s = *st.stream;
    st.x.set_data_handle(const_cast<float*>(x));
    st.y.set_data_handle(y);
    st.prims->forward.execute(s, {{DNNL_ARG_SRC, st.x}, {DNNL_ARG_DST, st.y}});
    s.wait();
  });
}

void Upsample2dOp::backward(const float* dy, float* dx) {
  State& st = *state_;
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    dnnl::stream& s = *st.stream;
    st.y.set_data_handle(const_cast<float*>(dy));
    st.x.set_data_handle(dx);
    st.prims->backward.execute(s, {{DNNL_ARG_DIFF_DST, st.y}, {DNNL_ARG_DIFF_SRC, st.x}});
    s.wait();
  });
}

std::string Upsample2dOp::implementation_forward() const { return state_->prims->impl_forward; }
std::string Upsample2dOp::implementation_backward() const { return state_->prims->impl_backward; }

}  // namespace pipec::train

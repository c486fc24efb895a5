#include "runtime/train/dnnl/softmax.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

namespace {

struct SoftmaxPrimitives {
  dnnl::softmax_forward forward;
  dnnl::softmax_backward backward;
  std::string impl_forward, impl_backward;
};

}  // namespace

struct SoftmaxOp::State {
  std::shared_ptr<SoftmaxPrimitives> prims;
  dnnl::stream* stream = nullptr;
  int threads = 0;
  std::string what;
  memory x, y, dy, dx;  // the caller's buffers (handles set per call)
};

std::string SoftmaxDesc::to_string() const { return fmt::format("softmax [{}, {}, {}] axis 1", outer, len, inner); }

SoftmaxOp::SoftmaxOp(CpuKernels& kernels, const SoftmaxDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.outer < 1 || d.len < 1 || d.inner < 1) fail(what, "every size must be at least 1");
  const Dims dims{d.outer, d.len, d.inner};
  check_tensor_sizes(what, {{"input", dims}});
  State& st = *state_;
  st.stream = &kernels.impl().stream;
  st.threads = kernels.threads();
  st.what = what;
  const std::string key = fmt::format("{} threads {}", what, st.threads);
  ThreadScope scope(st.threads);
  with_errors(what, [&] {
    st.prims = kernels.impl().cached<SoftmaxPrimitives>(key, [&] {
      using namespace dnnl;
      const dnnl::engine& e = kernels.impl().engine;
      memory::desc data = f32_desc(dims, memory::format_tag::abc);
      softmax_forward::primitive_desc fwd(softmax_forward::desc(prop_kind::forward_training, data, 1), e);
      softmax_backward::primitive_desc bwd(softmax_backward::desc(data, data, 1), e, fwd);
      auto p = std::make_shared<SoftmaxPrimitives>();
      p->forward = softmax_forward(fwd);
      p->backward = softmax_backward(bwd);
      p->impl_forward = fwd.impl_info_str();
      p->impl_backward = bwd.impl_info_str();
      return p;
    });
    const dnnl::engine& e = kernels.impl().engine;
    for (memory* m : {&st.x, &st.y, &st.dy, &st.dx})
      *m = memory(f32_desc(dims, memory::format_tag::abc), e, DNNL_MEMORY_NONE);
  });
}

SoftmaxOp::~SoftmaxOp() = default;
SoftmaxOp::SoftmaxOp(SoftmaxOp&&) noexcept = default;

void SoftmaxOp::forward(const float* x, float* y) {
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

void SoftmaxOp::backward(const float* y, const float* dy, float* dx) {
  State& st = *state_;
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    dnnl::stream& s = *st.stream;
    st.y.set_data_handle(const_cast<float*>(y));
    st.dy.set_data_handle(const_cast<float*>(dy));
    st.dx.set_data_handle(dx);
    st.prims->backward.execute(s, {{DNNL_ARG_DST, st.y}, {DNNL_ARG_DIFF_DST, st.dy}, {DNNL_ARG_DIFF_SRC, st.dx}});
    s.wait();
  });
}

std::string SoftmaxOp::implementation_forward() const { return state_->prims->impl_forward; }
std::string SoftmaxOp::implementation_backward() const { return state_->prims->impl_backward; }

}  // namespace pipec::train

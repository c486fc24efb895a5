#include "runtime/train/dnnl/eltwise.h"

#include <fmt/format.h>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

namespace {

struct EltwisePrimitives {
  dnnl::eltwise_forward forward;
  dnnl::eltwise_backward from_input, from_output;
  bool has_from_output = false;
  std::string impl_forward;
};

void* handle(const float* p) { return const_cast<float*>(p); }

}  // namespace

struct EltwiseOp::State {
  std::shared_ptr<EltwisePrimitives> prims;
  dnnl::stream* stream = nullptr;
  int threads = 0;
  std::string what;
  memory a, b, c;  // the caller's buffers (handles set per call)
};

std::string EltwiseDesc::to_string() const { return fmt::format("{} x {}", activation.name(), count); }

EltwiseOp::EltwiseOp(CpuKernels& kernels, const EltwiseDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.count < 1) fail(what, "the count must be at least 1");
  if (d.activation.kind == ActivationKind::None) fail(what, "no activation to apply");
  check_tensor_sizes(what, {{"input", {d.count}}});
  State& st = *state_;
  st.stream = &kernels.impl().stream;
  st.threads = kernels.threads();
  st.what = what;
  const std::string key = fmt::format("eltwise {} threads {}", what, st.threads);
  ThreadScope scope(st.threads);
  with_errors(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = kernels.impl().engine;
    memory::desc data = f32_desc({d.count}, memory::format_tag::a);
    const float alpha = d.activation.alpha;
    st.prims = kernels.impl().cached<EltwisePrimitives>(key, [&] {
      auto p = std::make_shared<EltwisePrimitives>();
      algorithm alg = eltwise_algorithm(d.activation.kind, false);
      eltwise_forward::primitive_desc fwd(eltwise_forward::desc(prop_kind::forward_training, alg, data, alpha, 0.f), e);
      p->forward = eltwise_forward(fwd);
      p->from_input = eltwise_backward(
          eltwise_backward::primitive_desc(eltwise_backward::desc(alg, data, data, alpha, 0.f), e, fwd));
      p->impl_forward = fwd.impl_info_str();
      if (d.activation.derivative_from_output()) {
        // The hint must be a forward of the same (use_dst_for_bwd) algorithm.
        algorithm dst_alg = eltwise_algorithm(d.activation.kind, true);
        eltwise_forward::primitive_desc hint(
            eltwise_forward::desc(prop_kind::forward_training, dst_alg, data, alpha, 0.f), e);
        p->from_output = eltwise_backward(
            eltwise_backward::primitive_desc(eltwise_backward::desc(dst_alg, data, data, alpha, 0.f), e, hint));
        p->has_from_output = true;
      }
      return p;
    });
    for (memory* m : {&st.a, &st.b, &st.c}) *m = memory(data, e, DNNL_MEMORY_NONE);
  });
}

EltwiseOp::~EltwiseOp() = default;
EltwiseOp::EltwiseOp(EltwiseOp&&) noexcept = default;

void EltwiseOp::forward(const float* x, float* y) {
  State& st = *state_;
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    st.a.set_data_handle(handle(x));
    st.b.set_data_handle(y);
    st.prims->forward.execute(*st.stream, {{DNNL_ARG_SRC, st.a}, {DNNL_ARG_DST, st.b}});
    st.stream->wait();
  });
}

void EltwiseOp::backward_from_input(const float* x, const float* dy, float* dx) {
  State& st = *state_;
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    st.a.set_data_handle(handle(x));
    st.b.set_data_handle(handle(dy));
    st.c.set_data_handle(dx);
    st.prims->from_input.execute(*st.stream,
                                 {{DNNL_ARG_SRC, st.a}, {DNNL_ARG_DIFF_DST, st.b}, {DNNL_ARG_DIFF_SRC, st.c}});
    st.stream->wait();
  });
}

void EltwiseOp::backward_from_output(const float* y, const float* dy, float* dx) {
  State& st = *state_;
  if (!st.prims->has_from_output)
    fail(st.what,
         "its derivative needs the input, not the output: keep the pre-activation and use backward_from_input");
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    st.a.set_data_handle(handle(y));
    st.b.set_data_handle(handle(dy));
    st.c.set_data_handle(dx);
    st.prims->from_output.execute(*st.stream,
                                  {{DNNL_ARG_DST, st.a}, {DNNL_ARG_DIFF_DST, st.b}, {DNNL_ARG_DIFF_SRC, st.c}});
    st.stream->wait();
  });
}

std::string EltwiseOp::implementation_forward() const { return state_->prims->impl_forward; }

}  // namespace pipec::train

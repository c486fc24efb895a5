#include "runtime/train/dnnl/layer_norm.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

namespace {

struct LayerNormPrimitives {
  dnnl::layer_normalization_forward forward;
  dnnl::layer_normalization_backward backward;
  std::string impl_forward, impl_backward;
};

void* handle(const float* p) { return const_cast<float*>(p); }

}  // namespace

struct LayerNormOp::State {
  std::shared_ptr<LayerNormPrimitives> prims;
  dnnl::stream* stream = nullptr;
  int threads = 0;
  std::string what;
  memory x, y, dy, dx, gamma, beta, dgamma, dbeta;  // the caller's (handles set per call)
  memory mean, variance;                            // owned: [rows], from the last forward
  memory their_mean, their_variance;                // the caller's (the overloads with statistics)
  memory unused_shift;                              // owned, zero: oneDNN 2.6's backward wants a shift it never reads
};

std::string LayerNormDesc::to_string() const {
  return fmt::format("layer_norm [{}, {}] epsilon {}", rows, features, epsilon);
}

LayerNormOp::LayerNormOp(CpuKernels& kernels, const LayerNormDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.rows < 1 || d.features < 1) fail(what, "every size must be at least 1");
  if (!(d.epsilon >= 0)) fail(what, "epsilon must not be negative");
  check_tensor_sizes(what, {{"input", {d.rows, d.features}}});
  State& st = *state_;
  st.stream = &kernels.impl().stream;
  st.threads = kernels.threads();
  st.what = what;
  const std::string key = fmt::format("{} threads {}", what, st.threads);
  ThreadScope scope(st.threads);
  with_errors(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = kernels.impl().engine;
    memory::desc data = f32_desc({d.rows, d.features}, memory::format_tag::ab);
    memory::desc stats = f32_desc({d.rows}, memory::format_tag::a);
    st.prims = kernels.impl().cached<LayerNormPrimitives>(key, [&] {
      auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
      layer_normalization_forward::primitive_desc fwd(
          layer_normalization_forward::desc(prop_kind::forward_training, data, stats, d.epsilon, flags), e);
      layer_normalization_backward::primitive_desc bwd(
          layer_normalization_backward::desc(prop_kind::backward, data, data, stats, d.epsilon, flags), e, fwd);
      auto p = std::make_shared<LayerNormPrimitives>();
      p->forward = layer_normalization_forward(fwd);
      p->backward = layer_normalization_backward(bwd);
      p->impl_forward = fwd.impl_info_str();
      p->impl_backward = bwd.impl_info_str();
      return p;
    });
    memory::desc feature = f32_desc({d.features}, memory::format_tag::x);
    for (memory* m : {&st.x, &st.y, &st.dy, &st.dx}) *m = memory(data, e, DNNL_MEMORY_NONE);
    for (memory* m : {&st.gamma, &st.beta, &st.dgamma, &st.dbeta}) *m = memory(feature, e, DNNL_MEMORY_NONE);
    st.mean = memory(stats, e);
    st.variance = memory(stats, e);
    st.their_mean = memory(stats, e, DNNL_MEMORY_NONE);
    st.their_variance = memory(stats, e, DNNL_MEMORY_NONE);
    st.unused_shift = memory(feature, e);
    std::fill_n(static_cast<float*>(st.unused_shift.get_data_handle()), d.features, 0.0f);
  });
}

LayerNormOp::~LayerNormOp() = default;
LayerNormOp::LayerNormOp(LayerNormOp&&) noexcept = default;

namespace {

void run_forward(LayerNormOp::State& st, const float* x, const float* gamma, const float* beta, float* y,
                 const memory& mean, const memory& variance);
void run_backward(LayerNormOp::State& st, const float* x, const float* gamma, const float* dy, const memory& mean,
                  const memory& variance, float* dx, float* dgamma, float* dbeta);

}  // namespace

void LayerNormOp::forward(const float* x, const float* gamma, const float* beta, float* y) {
  run_forward(*state_, x, gamma, beta, y, state_->mean, state_->variance);
}

void LayerNormOp::backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                           float* dbeta) {
  run_backward(*state_, x, gamma, dy, state_->mean, state_->variance, dx, dgamma, dbeta);
}

void LayerNormOp::forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                          float* variance) {
  State& st = *state_;
  st.their_mean.set_data_handle(mean);
  st.their_variance.set_data_handle(variance);
  run_forward(st, x, gamma, beta, y, st.their_mean, st.their_variance);
}

void LayerNormOp::backward(const float* x, const float* gamma, const float* dy, const float* mean,
                           const float* variance, float* dx, float* dgamma, float* dbeta) {
  State& st = *state_;
  st.their_mean.set_data_handle(handle(mean));
  st.their_variance.set_data_handle(handle(variance));
  run_backward(st, x, gamma, dy, st.their_mean, st.their_variance, dx, dgamma, dbeta);
}

namespace {

void run_forward(LayerNormOp::State& st, const float* x, const float* gamma, const float* beta, float* y,
                 const memory& mean, const memory& variance) {
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    dnnl::stream& s = *st.stream;
    st.x.set_data_handle(handle(x));
    st.y.set_data_handle(y);
    st.gamma.set_data_handle(handle(gamma));
    st.beta.set_data_handle(handle(beta));
    st.prims->forward.execute(s, {{DNNL_ARG_SRC, st.x},
                                  {DNNL_ARG_DST, st.y},
                                  {DNNL_ARG_SCALE, st.gamma},
                                  {DNNL_ARG_SHIFT, st.beta},
                                  {DNNL_ARG_MEAN, mean},
                                  {DNNL_ARG_VARIANCE, variance}});
    s.wait();
  });
}

void run_backward(LayerNormOp::State& st, const float* x, const float* gamma, const float* dy, const memory& mean,
                  const memory& variance, float* dx, float* dgamma, float* dbeta) {
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    dnnl::stream& s = *st.stream;
    st.x.set_data_handle(handle(x));
    st.dy.set_data_handle(handle(dy));
    st.dx.set_data_handle(dx);
    st.gamma.set_data_handle(handle(gamma));
    st.dgamma.set_data_handle(dgamma);
    st.dbeta.set_data_handle(dbeta);
    st.prims->backward.execute(s, {{DNNL_ARG_SRC, st.x},
                                   {DNNL_ARG_DIFF_DST, st.dy},
                                   {DNNL_ARG_MEAN, mean},
                                   {DNNL_ARG_VARIANCE, variance},
                                   {DNNL_ARG_SCALE, st.gamma},
                                   {DNNL_ARG_SHIFT, st.unused_shift},
                                   {DNNL_ARG_DIFF_SRC, st.dx},
                                   {DNNL_ARG_DIFF_SCALE, st.dgamma},
                                   {DNNL_ARG_DIFF_SHIFT, st.dbeta}});
    s.wait();
  });
}

}  // namespace

std::string LayerNormOp::implementation_forward() const { return state_->prims->impl_forward; }
std::string LayerNormOp::implementation_backward() const { return state_->prims->impl_backward; }

}  // namespace pipec::train

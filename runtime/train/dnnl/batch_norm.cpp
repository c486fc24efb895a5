#include "runtime/train/dnnl/batch_norm.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/ops/batch_statistics.h"
#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

namespace {

// Training's forward is our one-pass statistics (runtime/ops/batch_statistics.h) and then the
// normalization with those statistics, which is oneDNN's `use_global_stats` primitive: oneDNN's own
// training forward reads x three times (mean, variance, normalization), this twice.
struct BatchNormPrimitives {
  dnnl::batch_normalization_forward inference;
  dnnl::batch_normalization_backward backward;
  std::string impl_forward, impl_backward;
};

}  // namespace

struct BatchNormOp::State {
  std::shared_ptr<BatchNormPrimitives> prims;
  dnnl::stream* stream = nullptr;
  int threads = 0;
  std::string what;
  memory x, y, dy, dx;                  // the caller's data (handles set per call)
  memory gamma, beta, dgamma, dbeta;    // the caller's [channels] parameters
  memory mean, variance;                // owned: the batch statistics of the last training forward
  memory unused_shift;                  // owned, zero: oneDNN 2.6's backward wants a shift it never reads
  memory moving_mean, moving_variance;  // the caller's, for inference
};

std::string BatchNormDesc::to_string() const {
  return fmt::format("batch_norm [{}, {}, {}, {}] epsilon {}", batch, height, width, channels, epsilon);
}

BatchNormOp::BatchNormOp(CpuKernels& kernels, const BatchNormDesc& d) : desc_(d), state_(std::make_unique<State>()) {
  const std::string what = d.to_string();
  if (d.batch < 1 || d.height < 1 || d.width < 1 || d.channels < 1) fail(what, "every size must be at least 1");
  if (!(d.epsilon >= 0)) fail(what, "epsilon must not be negative");
  State& st = *state_;
  st.stream = &kernels.impl().stream;
  st.threads = kernels.threads();
  st.what = what;
  const Dims data_dims{d.batch, d.channels, d.height, d.width};
  const Dims channel_dims{d.channels};
  check_tensor_sizes(what, {{"input", data_dims}});
  const std::string key = fmt::format("{} threads {}", what, st.threads);
  ThreadScope scope(st.threads);
  with_errors(what, [&] {
    using namespace dnnl;
    const dnnl::engine& e = kernels.impl().engine;
    memory::desc data = f32_desc(data_dims, memory::format_tag::nhwc);
    st.prims = kernels.impl().cached<BatchNormPrimitives>(key, [&] {
      auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
      batch_normalization_forward::primitive_desc train(
          batch_normalization_forward::desc(prop_kind::forward_training, data, d.epsilon, flags), e);
      batch_normalization_forward::primitive_desc infer(
          batch_normalization_forward::desc(prop_kind::forward_inference, data, d.epsilon,
                                            flags | normalization_flags::use_global_stats),
          e);
      batch_normalization_backward::primitive_desc bwd(
          batch_normalization_backward::desc(prop_kind::backward, data, data, d.epsilon, flags), e, train);
      auto p = std::make_shared<BatchNormPrimitives>();
      p->inference = batch_normalization_forward(infer);
      p->backward = batch_normalization_backward(bwd);  // made with the training forward as its hint
      p->impl_forward = infer.impl_info_str();
      p->impl_backward = bwd.impl_info_str();
      return p;
    });
    memory::desc channel = f32_desc(channel_dims, memory::format_tag::x);
    for (memory* m : {&st.x, &st.y, &st.dy, &st.dx}) *m = memory(data, e, DNNL_MEMORY_NONE);
    for (memory* m : {&st.gamma, &st.beta, &st.dgamma, &st.dbeta, &st.moving_mean, &st.moving_variance})
      *m = memory(channel, e, DNNL_MEMORY_NONE);
    st.mean = memory(channel, e);
    st.variance = memory(channel, e);
    st.unused_shift = memory(channel, e);
    std::fill_n(static_cast<float*>(st.unused_shift.get_data_handle()), d.channels, 0.0f);
  });
}

BatchNormOp::~BatchNormOp() = default;
BatchNormOp::BatchNormOp(BatchNormOp&&) noexcept = default;

namespace {
void* handle(const float* p) { return const_cast<float*>(p); }
}  // namespace

void BatchNormOp::forward_training(const float* x, const float* gamma, const float* beta, float* y, float* moving_mean,
                                   float* moving_variance) {
  State& st = *state_;
  const int64_t rows = desc_.batch * desc_.height * desc_.width, channels = desc_.channels;
  float* mean = static_cast<float*>(st.mean.get_data_handle());
  float* var = static_cast<float*>(st.variance.get_data_handle());
  std::vector<double> mean64(static_cast<size_t>(channels)), var64(mean64.size());
  batch_statistics<float>(rows, channels, x, mean64.data(), var64.data(), parallel_for(st.threads));
  std::copy(mean64.begin(), mean64.end(), mean);
  std::copy(var64.begin(), var64.end(), var);
  ThreadScope scope(st.threads);
  with_errors(st.what, [&] {
    dnnl::stream& s = *st.stream;
    st.x.set_data_handle(handle(x));
    st.y.set_data_handle(y);
    st.gamma.set_data_handle(handle(gamma));
    st.beta.set_data_handle(handle(beta));
    st.prims->inference.execute(s, {{DNNL_ARG_SRC, st.x},
                                    {DNNL_ARG_DST, st.y},
                                    {DNNL_ARG_SCALE, st.gamma},
                                    {DNNL_ARG_SHIFT, st.beta},
                                    {DNNL_ARG_MEAN, st.mean},
                                    {DNNL_ARG_VARIANCE, st.variance}});
    s.wait();
  });
  // Keras' moving averages (a [channels] loop: not worth a primitive).
  const float m = desc_.momentum;
  for (int64_t c = 0; c < desc_.channels; ++c) {
    if (moving_mean) moving_mean[c] = moving_mean[c] * m + mean[c] * (1 - m);
    if (moving_variance) moving_variance[c] = moving_variance[c] * m + var[c] * (1 - m);
  }
}

void BatchNormOp::forward_inference(const float* x, const float* gamma, const float* beta, const float* moving_mean,
                                    const float* moving_variance, float* y) {
  State& st = *state_;
  ThreadScope threads(st.threads);
  with_errors(st.what, [&] {
    dnnl::stream& s = *st.stream;
    st.x.set_data_handle(handle(x));
    st.y.set_data_handle(y);
    st.gamma.set_data_handle(handle(gamma));
    st.beta.set_data_handle(handle(beta));
    st.moving_mean.set_data_handle(handle(moving_mean));
    st.moving_variance.set_data_handle(handle(moving_variance));
    st.prims->inference.execute(s, {{DNNL_ARG_SRC, st.x},
                                    {DNNL_ARG_DST, st.y},
                                    {DNNL_ARG_SCALE, st.gamma},
                                    {DNNL_ARG_SHIFT, st.beta},
                                    {DNNL_ARG_MEAN, st.moving_mean},
                                    {DNNL_ARG_VARIANCE, st.moving_variance}});
    s.wait();
  });
}

void BatchNormOp::backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                           float* dbeta) {
  State& st = *state_;
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
                                   {DNNL_ARG_MEAN, st.mean},
                                   {DNNL_ARG_VARIANCE, st.variance},
                                   {DNNL_ARG_SCALE, st.gamma},
                                   {DNNL_ARG_SHIFT, st.unused_shift},
                                   {DNNL_ARG_DIFF_SRC, st.dx},
                                   {DNNL_ARG_DIFF_SCALE, st.dgamma},
                                   {DNNL_ARG_DIFF_SHIFT, st.dbeta}});
    s.wait();
  });
}

std::vector<float> BatchNormOp::batch_mean() const {
  const float* p = static_cast<const float*>(state_->mean.get_data_handle());
  return std::vector<float>(p, p + desc_.channels);
}

std::vector<float> BatchNormOp::batch_variance() const {
  const float* p = static_cast<const float*>(state_->variance.get_data_handle());
  return std::vector<float>(p, p + desc_.channels);
}

std::string BatchNormOp::implementation_forward() const { return state_->prims->impl_forward; }
std::string BatchNormOp::implementation_backward() const { return state_->prims->impl_backward; }

}  // namespace pipec::train

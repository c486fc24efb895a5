#include "runtime/train/dnnl/normalization_layer.h"

#include <algorithm>

namespace pipec::train {

NormalizationLayer::NormalizationLayer(OpContext ctx, std::shared_ptr<ForwardBackward> prims,
                                       const NormalizationLayouts& layouts)
    : ctx_(std::move(ctx)), prims_(std::move(prims)) {
  ctx_.prepare([&] {
    for (memory* m : {&x_, &y_, &dy_, &dx_}) *m = ctx_.caller_memory(layouts.data);
    for (memory* m : {&gamma_, &beta_, &dgamma_, &dbeta_}) *m = ctx_.caller_memory(layouts.parameters);
    for (memory* m : {&their_mean_, &their_variance_}) *m = ctx_.caller_memory(layouts.statistics);
    own_mean_ = memory(layouts.statistics, ctx_.engine());
    own_variance_ = memory(layouts.statistics, ctx_.engine());
    unused_shift_ = memory(layouts.parameters, ctx_.engine());
    float* shift = static_cast<float*>(unused_shift_.get_data_handle());
    std::fill_n(shift, layouts.parameters.get_size() / sizeof(float), 0.0f);
  });
  ctx_.kernels().impl().scratchpad.need(prims_->scratchpad);
}

KernelMemory NormalizationLayer::owned_memory() const {
  KernelMemory m;
  m.workspaces = static_cast<int64_t>(own_mean_.get_desc().get_size() + own_variance_.get_desc().get_size() +
                                      unused_shift_.get_desc().get_size());
  return m;
}

namespace {

/// The layer's own statistic, or the caller's (`theirs` bound to `data`) when there is one.
PrimitiveArg statistic(int arg, const memory& own, const memory& theirs, const float* data) {
  return data == nullptr ? PrimitiveArg(arg, own) : PrimitiveArg(arg, theirs, data);
}

}  // namespace

void NormalizationLayer::forward(const float* x, const float* gamma, const float* beta, float* y, const float* mean,
                                 const float* variance) {
  ctx_.run(prims_->forward, {{DNNL_ARG_SRC, x_, x},
                             {DNNL_ARG_DST, y_, y},
                             {DNNL_ARG_SCALE, gamma_, gamma},
                             {DNNL_ARG_SHIFT, beta_, beta},
                             statistic(DNNL_ARG_MEAN, own_mean_, their_mean_, mean),
                             statistic(DNNL_ARG_VARIANCE, own_variance_, their_variance_, variance)});
}

void NormalizationLayer::backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                                  float* dbeta, const float* mean, const float* variance) {
  ctx_.run(prims_->backward, {{DNNL_ARG_SRC, x_, x},
                              {DNNL_ARG_DIFF_DST, dy_, dy},
                              statistic(DNNL_ARG_MEAN, own_mean_, their_mean_, mean),
                              statistic(DNNL_ARG_VARIANCE, own_variance_, their_variance_, variance),
                              {DNNL_ARG_SCALE, gamma_, gamma},
                              {DNNL_ARG_SHIFT, unused_shift_},
                              {DNNL_ARG_DIFF_SRC, dx_, dx},
                              {DNNL_ARG_DIFF_SCALE, dgamma_, dgamma},
                              {DNNL_ARG_DIFF_SHIFT, dbeta_, dbeta}});
}

}  // namespace pipec::train

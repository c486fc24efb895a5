// Private to this folder: what batch_norm and layer_norm share once their primitives exist: a forward
// that normalizes with a mean and variance and a backward from them, both with scale and shift (Keras'
// gamma and beta) and the caller's buffers bound per call; the statistics are the layer's own (kept
// from a forward for the backward of the same step) or the caller's. Each op's file keeps what is its
// own: the flags, the shapes of its data and statistics, and where its statistics come from.
#pragma once

#include <memory>
#include <string>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

/// The layouts of one layer: x, y and their gradients; gamma, beta and theirs; the mean and variance.
struct NormalizationLayouts {
  memory::desc data, parameters, statistics;
};

/// One layer instance: the shared primitives (a forward that writes the statistics, as a training
/// forward does, or reads them, as a global-statistics one does; a backward that reads them), the
/// memories its calls bind, and its own statistics.
class NormalizationLayer {
 public:
  NormalizationLayer(OpContext ctx, std::shared_ptr<ForwardBackward> prims, const NormalizationLayouts& layouts);

  /// y from x with the statistics at mean and variance, or the layer's own when those are null (the
  /// forward primitive writes them or reads them, as it was made).
  void forward(const float* x, const float* gamma, const float* beta, float* y, const float* mean = nullptr,
               const float* variance = nullptr);
  /// dx, dgamma, dbeta from dy with the statistics at mean and variance, or the layer's own when null.
  void backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta,
                const float* mean = nullptr, const float* variance = nullptr);

  /// The layer's own statistics (the size of the layouts' statistics each).
  float* own_mean() const { return static_cast<float*>(own_mean_.get_data_handle()); }
  float* own_variance() const { return static_cast<float*>(own_variance_.get_data_handle()); }
  const OpContext& context() const { return ctx_; }
  const ForwardBackward& primitives() const { return *prims_; }
  /// Its own statistics and shift.
  KernelMemory owned_memory() const;

 private:
  OpContext ctx_;
  std::shared_ptr<ForwardBackward> prims_;
  memory x_, y_, dy_, dx_, gamma_, beta_, dgamma_, dbeta_;  // the caller's (bound per call)
  memory own_mean_, own_variance_;                          // owned
  memory their_mean_, their_variance_;                      // the caller's statistics (bound per call)
  memory unused_shift_;  // owned, zero: oneDNN 2.6's backward wants a shift it never reads
};

}  // namespace pipec::train

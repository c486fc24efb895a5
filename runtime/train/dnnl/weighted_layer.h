// Private to this folder: what conv2d, conv2d_transpose and dense share once their primitives exist:
// a forward (with bias and a fused activation), a backward-data and a backward-weights (with the bias
// gradient) primitive, each with the memory layouts oneDNN chose, and the staging of the caller's
// Keras-layout buffers into those layouts and back.
#pragma once

#include <memory>
#include <string>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

/// The three primitives of one layer shape, shared by every op with that shape (the cache's value).
struct WeightedPrimitives {
  dnnl::primitive forward, backward_data, backward_weights;
  // Layouts the primitives chose.
  memory::desc fwd_src, fwd_weights, fwd_bias, fwd_dst;
  memory::desc bd_diff_src, bd_weights, bd_diff_dst;
  memory::desc bw_src, bw_diff_weights, bw_diff_bias, bw_diff_dst;
  std::string impl_forward, impl_backward_data, impl_backward_weights;
  bool bias = true;
  size_t scratchpad = 0;  // the most bytes of scratchpad one of the three needs (SharedScratchpad)
  // Whether the primitives gave the same results twice for one input (conv2d checks its Winograd sets
  // on their first calls, conv2d.cpp): unknown until an op has checked, for every op sharing the set.
  enum class Repeats { Unknown, Yes, No };
  Repeats forward_repeats = Repeats::Unknown, backward_repeats = Repeats::Unknown;
};

/// The memory descriptors a layer's three primitives are made from: what a primitive reads (`*_in`: x for
/// the forward and backward-weights, the kernel for the forward and backward-data, dy for both backward
/// primitives) and what it writes (`*_out`: y, dx, the kernel gradient). All f32, except that under
/// CpuKernelOptions::bf16 what is read is bf16; the bias and its gradient are always f32.
struct WeightedDescs {
  memory::desc x_in, x_out, w_in, w_out, b, y_in, y_out;
};
/// `act` is the activations' tag (activation_tag, or `any`); the kernel's is always `any`; no bias
/// when `bias_size` is 0.
WeightedDescs weighted_descs(const CpuKernels& k, const Dims& x, const Dims& w, const Dims& y, int64_t bias_size,
                             memory::format_tag act);

/// The caller's layouts of one layer: x, w, y (the bias is always [filters]), and those of x and dy
/// where the layer reads them (x_read, y_read: bf16 when the caller stores them so, which the bf16
/// primitives then read in place; else as x and y). What it writes (y, dx) is always as x and y.
struct UserLayouts {
  memory::desc x, w, y;
  memory::desc x_read, y_read;
};
/// The caller's layouts with x and dy read as bf16 where `bf16_x` and `bf16_dy` say (bf16 kernels only).
UserLayouts user_layouts(const CpuKernels& k, const Dims& x, memory::format_tag x_tag, const Dims& w,
                         memory::format_tag w_tag, const Dims& y, memory::format_tag y_tag, bool bf16_x, bool bf16_dy);

/// Makes the set from oneDNN primitive descriptors of one family (convolution, deconvolution, inner
/// product: each has src_desc(), weights_desc(), ...).
template <class Fwd, class BwdData, class BwdWeights>
std::shared_ptr<WeightedPrimitives> make_weighted(const typename Fwd::primitive_desc& fwd,
                                                  const typename BwdData::primitive_desc& bd,
                                                  const typename BwdWeights::primitive_desc& bw, bool bias) {
  auto p = std::make_shared<WeightedPrimitives>();
  p->bias = bias;
  p->forward = Fwd(fwd);
  p->backward_data = BwdData(bd);
  p->backward_weights = BwdWeights(bw);
  p->fwd_src = fwd.src_desc();
  p->fwd_weights = fwd.weights_desc();
  p->fwd_bias = fwd.bias_desc();
  p->fwd_dst = fwd.dst_desc();
  p->bd_diff_src = bd.diff_src_desc();
  p->bd_weights = bd.weights_desc();
  p->bd_diff_dst = bd.diff_dst_desc();
  p->bw_src = bw.src_desc();
  p->bw_diff_weights = bw.diff_weights_desc();
  p->bw_diff_bias = bw.diff_bias_desc();
  p->bw_diff_dst = bw.diff_dst_desc();
  p->impl_forward = fwd.impl_info_str();
  p->impl_backward_data = bd.impl_info_str();
  p->impl_backward_weights = bw.impl_info_str();
  p->scratchpad =
      std::max({fwd.scratchpad_desc().get_size(), bd.scratchpad_desc().get_size(), bw.scratchpad_desc().get_size()});
  return p;
}

/// One layer instance: the shared primitives plus its own staging buffers (reordered weights, reordered
/// activations), so two layers of one shape never overwrite each other's cached weights.
class WeightedLayer {
 public:
  WeightedLayer(OpContext ctx, std::shared_ptr<WeightedPrimitives> prims, const UserLayouts& user, int64_t bias_size);

  void forward(const float* x, const float* w, const float* b, float* y);
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db);
  const WeightedPrimitives& primitives() const { return *prims_; }
  WeightedPrimitives& primitives() { return *prims_; }
  /// The next call reorders the weights again (a repeated call must redo all of its work).
  void forget_cached_weights() {
    w_fwd_.forget_cached();
    w_bd_.forget_cached();
  }
  /// The buffers this layer owns: reordered weights and weight gradients, the forward's reordered x.
  KernelMemory owned_memory() const;

 private:
  OpContext ctx_;
  std::shared_ptr<WeightedPrimitives> prims_;
  Staged x_fwd_, w_fwd_, b_fwd_, y_fwd_;
  Staged dy_bd_, w_bd_, dx_bd_;
  Staged x_bw_, dy_bw_, dw_bw_, db_bw_;
  const float* last_forward_x_ = nullptr;  // x_fwd_ holds its reorder; backward-weights may reuse it
};

}  // namespace pipec::train

// ---- the optimizer's update and mixed_fp16's dynamic loss scaling ----
// runtime/train/math/optimizer.cpp's loop over the flat buffers, one element per item, in f32 with the same
// operations in the same order: with fused multiply-add off (NVRTC --fmad=false, the host build
// -ffp-contract=off) the weights and slots are the CPU's bit for bit. The scalars that change every
// step are read from device arrays the host fills (step_scalars) or the device computes (the clip scale,
// the loss scale's inverse and skip flag), so a replayed CUDA graph sees each step's values.
//
// step_scalars (float[3], runtime/train/gpu/node_kernels.h's optimizer_step_scalars()):
#define SK_SCALAR_LR 0     // sgd: the learning rate of this step
#define SK_SCALAR_ALPHA 1  // adam: lr sqrt(1 - beta2^t) / (1 - beta1^t)
#define SK_SCALAR_DECAY 2  // lr * weight_decay
// status (double[4], written by the device, read back by the host):
#define SK_STATUS_NORM 0        // the gradients' global norm before clipping (0 without clipping)
#define SK_STATUS_CLIP_SCALE 1  // clipnorm / norm when the norm is above it, else 1
#define SK_STATUS_SKIP 2        // 1 when mixed_fp16 skips this step's update, else 0
#define SK_STATUS_INVERSE 3     // 1 / loss scale (as an f32) of this step
// loss scale state (double[4], runtime/train/math/loss_scale.h's LossScale on the device):
#define SK_LS_SCALE 0
#define SK_LS_GOOD_STEPS 1
#define SK_LS_SKIPPED 2
#define SK_LS_LAST_SKIPPED 3
#define SK_LS_GROWTH_STEPS 2000  // LossScale::kGrowthSteps

#define SK_OPT_SGD 0           // plain steps (momentum 0)
#define SK_OPT_SGD_MOMENTUM 1  // Keras' momentum form, the velocity in m
#define SK_OPT_ADAM 2          // adam and adamw (adamw: adam with its own default weight decay)

// The global norm's partial sums: item b, the sum of g^2 over block b of `block` (kNormBlock) elements,
// in f64 and in order, as the CPU's global_norm(). The sum is one chain of dependent adds, so the loads
// go ahead of it in batches of SK_NORM_BATCH (the next batch is read while the current one is added):
// the order of the adds, and so the result, is the loop's.
#define SK_NORM_BATCH 32
PIPEC_KERNEL void grad_norm_partial(long long items, const float* g, double* partial, long long n, long long block) {
  SK_FOR_ITEMS(b, items) {
    const long long begin = b * block, end = sk_min(n, (b + 1) * block);
    double sum = 0;
    long long i = begin;
    if (end - begin >= 2 * SK_NORM_BATCH) {
      float cur[SK_NORM_BATCH], next[SK_NORM_BATCH];
      for (int k = 0; k < SK_NORM_BATCH; ++k) cur[k] = g[i + k];
      for (; i + 2 * SK_NORM_BATCH <= end; i += SK_NORM_BATCH) {
        for (int k = 0; k < SK_NORM_BATCH; ++k) next[k] = g[i + SK_NORM_BATCH + k];
        for (int k = 0; k < SK_NORM_BATCH; ++k) sum += (double)cur[k] * (double)cur[k];
        for (int k = 0; k < SK_NORM_BATCH; ++k) cur[k] = next[k];
      }
      for (int k = 0; k < SK_NORM_BATCH; ++k) sum += (double)cur[k] * (double)cur[k];
      i += SK_NORM_BATCH;
    }
    for (; i < end; ++i) sum += (double)g[i] * (double)g[i];
    partial[b] = sum;
  }
}

// One item: norm = sqrt(the blocks' sums in order); the clip scale tf.clip_by_global_norm applies.
PIPEC_KERNEL void grad_norm_finish(long long items, const double* partial, long long blocks, double clipnorm,
                                   double* status) {
  SK_FOR_ITEMS(i, items) {
    double sum = 0;
    for (long long b = 0; b < blocks; ++b) sum += partial[b];
    const double norm = sqrt(sum);
    status[SK_STATUS_NORM] = norm;
    // Stored as the f32 the update multiplies by (exact in the f64 slot).
    status[SK_STATUS_CLIP_SCALE] = norm > clipnorm ? (double)(float)(clipnorm / norm) : 1.0;
  }
}

// mixed_fp16's finite check, first level: item t, 1 when the gradients t, t + items, t + 2 items, ... are
// all finite, else 0 (a coalesced sweep: whether all are finite does not depend on the order).
PIPEC_KERNEL void grad_finite_partial(long long items, const float* g, double* partial, long long n) {
  SK_FOR_ITEMS(t, items) {
    bool finite = true;
    for (long long i = t; i < n; i += items) finite = sk_finite_f32(g[i]) && finite;
    partial[t] = finite ? 1.0 : 0.0;
  }
}

// The next level: item t, 1 when the flags t, t + items, ... of `in` (n of them) are all 1, else 0.
PIPEC_KERNEL void all_nonzero(long long items, const double* in, double* out, long long n) {
  SK_FOR_ITEMS(t, items) {
    bool all = true;
    for (long long i = t; i < n; i += items) all = in[i] != 0.0 && all;
    out[t] = all ? 1.0 : 0.0;
  }
}

// One item: the step goes on when the loss and every gradient are finite (LossScale::unscale_or_skip).
// Sets the skip flag and the inverse the gradients are unscaled by (1 / scale before any change), then
// changes the scale by LossScale's rules: halved on a skip, doubled after kGrowthSteps finite steps in a
// row. `scale_f32` gets the new scale as the f32 the next loss_backward multiplies by.
PIPEC_KERNEL void loss_scale_update(long long items, const float* loss, const double* finite_partial, long long blocks,
                                    double* state, double* status, float* scale_f32) {
  SK_FOR_ITEMS(i, items) {
    bool finite = sk_finite_f32(*loss);
    for (long long b = 0; b < blocks; ++b) finite = finite_partial[b] != 0.0 && finite;
    status[SK_STATUS_SKIP] = finite ? 0.0 : 1.0;
    status[SK_STATUS_INVERSE] = (double)(float)(1 / state[SK_LS_SCALE]);
    state[SK_LS_LAST_SKIPPED] = finite ? 0.0 : 1.0;
    if (!finite) {
      state[SK_LS_SCALE] /= 2;
      state[SK_LS_GOOD_STEPS] = 0;
      state[SK_LS_SKIPPED] += 1;
    } else {
      state[SK_LS_GOOD_STEPS] += 1;
      if (state[SK_LS_GOOD_STEPS] == SK_LS_GROWTH_STEPS) {
        state[SK_LS_SCALE] *= 2;
        state[SK_LS_GOOD_STEPS] = 0;
      }
    }
    *scale_f32 = (float)state[SK_LS_SCALE];
  }
}

// g *= 1 / scale in place (the CPU unscales its gradient buffer too), unless the step is skipped.
PIPEC_KERNEL void unscale_gradients(long long items, float* g, const double* status) {
  if (status[SK_STATUS_SKIP] != 0.0) return;
  const float inverse = (float)status[SK_STATUS_INVERSE];
  SK_FOR_ITEMS(i, items) g[i] *= inverse;
}

// One element's update: the clipped gradient, weight decay (first, as Keras), then sgd or adam. With
// `check_skip` (mixed_fp16) nothing moves when status says the step is skipped; with `clip` the gradient
// is multiplied by the clip scale (by 1 when the norm is below clipnorm: the CPU's unclipped value, bit
// for bit). `status` is read only for those two.
PIPEC_KERNEL void optimizer_update(long long items, float* w, const float* g, float* m, float* v,
                                   const float* step_scalars, const double* status, int kind, int clip, int check_skip,
                                   int decay, float momentum, float one_minus_beta1, float one_minus_beta2, float eps) {
  if (check_skip && status[SK_STATUS_SKIP] != 0.0) return;
  const float clip_scale = clip ? (float)status[SK_STATUS_CLIP_SCALE] : 1.0f;
  const float lr = step_scalars[SK_SCALAR_LR], alpha = step_scalars[SK_SCALAR_ALPHA],
              decay_rate = step_scalars[SK_SCALAR_DECAY];
  SK_FOR_ITEMS(i, items) {
    const float gi = clip ? g[i] * clip_scale : g[i];
    float wi = w[i];
    if (decay) wi -= wi * decay_rate;
    if (kind == SK_OPT_SGD) {
      wi -= gi * lr;
    } else if (kind == SK_OPT_SGD_MOMENTUM) {
      const float mi = m[i] * momentum - gi * lr;
      m[i] = mi;
      wi += mi;
    } else {
      float mi = m[i], vi = v[i];
      mi += (gi - mi) * one_minus_beta1;
      vi += (gi * gi - vi) * one_minus_beta2;
      m[i] = mi;
      v[i] = vi;
      wi -= mi * alpha / (sqrtf(vi) + eps);
    }
    w[i] = wi;
  }
}

// The optimizers, in Keras' formulas, as one loop over the flat parameter and gradient buffers.
//
//   weight decay (any optimizer with weight_decay > 0, biases included, applied first, as Keras does):
//       w -= lr * weight_decay * w
//   sgd:   momentum == 0: w -= lr * g
//          otherwise:     v = momentum * v - lr * g;  w += v
//   adam, adamw (t = 1, 2, ...):
//          lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
//          m += (g - m) * (1 - beta1);  v += (g^2 - v) * (1 - beta2)
//          w -= lr_t * m / (sqrt(v) + eps)
// lr follows the schedule (runtime/train/math/lr_schedule.h) at the step count before the step. With
// global_clipnorm > 0 the gradients are first scaled as Keras' `global_clipnorm` scales them
// (tf.clip_by_global_norm): g *= clipnorm / max(norm, clipnorm), norm = sqrt(sum of every g^2).
// PyTorch differs in two visible ways: its Adam adds eps to the bias-corrected sqrt(v_hat), and its
// Adam's weight_decay adds weight_decay * w to the gradient (L2) instead of decaying the weights (AdamW
// decays them as here).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/core/parallel_for.h"
#include "runtime/model/model_graph.h"
#include "runtime/plan/native_kernel.h"
#include "runtime/train/math/lr_schedule.h"

namespace pipec {

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-7;
  double weight_decay = 0;
  double momentum = 0;
  double global_clipnorm = 0;  // 0: no clipping
  LrSchedule schedule;         // schedule.initial is `lr` when lr is a number

  /// The settings of an optimizer_step node (its OptimizerAttrs; an absent setting keeps its default).
  static OptimizerConfig from_node(const GraphNode& n);
  static OptimizerConfig from_attrs(const OptimizerAttrs& a);
};

/// The optimizer's state beside the weights: Adam's moments (m, v) or SGD's velocity (m), and the
/// number of steps taken.
template <class T>
struct OptimizerSlots {
  std::vector<T> m, v;
  int64_t iterations = 0;
  double last_lr = 0;         // the learning rate of the last step
  double last_grad_norm = 0;  // the global norm of its gradients, before clipping (0 without clipping)
};

/// The compiled update (compiler/codegen/llvm/emit_optimizer.h, attached to the optimizer_step node as
/// GraphNode::native by `attach_step_kernels`) on the PipecKernelFn ABI: inputs {g, scalars}, outputs
/// {w, m, v} read and written in place (m and v unused by plain sgd, v by sgd with momentum), `rows`
/// elements of each; scalars as below. Its update is this file's loop, bit for bit.
struct OptimizerKernelScalars {
  float rate;        // adam: lr * sqrt(1 - beta2^t) / (1 - beta1^t); sgd: lr
  float decay;       // lr * weight_decay
  float clip_scale;  // global_clipnorm / norm when the norm is above it, else 1
};

/// One update of every parameter from its gradient. Every loop is element by element, so `parallel`
/// (the fast executor's threads; none: one loop) gives the same weights bit for bit whatever its parts;
/// the global norm is summed over fixed blocks of kNormBlock elements, in block order, for the same
/// reason. With `kernel` (f32 only) each part runs the compiled update instead of the loop.
template <class T>
void optimizer_step(const OptimizerConfig& c, std::vector<T>& params, const std::vector<T>& grads,
                    OptimizerSlots<T>& slots, const ParallelFor& parallel = nullptr,
                    const NativeKernel* kernel = nullptr);

constexpr int64_t kNormBlock = 1 << 16;

}  // namespace pipec

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
// PyTorch differs in two visible ways: its Adam adds eps to the bias-corrected sqrt(v_hat), and its
// Adam's weight_decay adds weight_decay * w to the gradient (L2) instead of decaying the weights (AdamW
// decays them as here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-7;
  double weight_decay = 0;
  double momentum = 0;

  /// The settings of an optimizer_step node (a `kind` that is not an optimizer is a std::logic_error).
  static OptimizerConfig from_node(const GraphNode& n);
};

/// The optimizer's state beside the weights: Adam's moments (m, v) or SGD's velocity (m), and the
/// number of steps taken.
template <class T>
struct OptimizerSlots {
  std::vector<T> m, v;
  int64_t iterations = 0;
};

/// One update of every parameter from its gradient.
template <class T>
void optimizer_step(const OptimizerConfig& c, std::vector<T>& params, const std::vector<T>& grads,
                    OptimizerSlots<T>& slots);

}  // namespace pipec

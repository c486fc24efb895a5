// Forward graph + loss + optimizer -> the graph of one training step: the loss node, the backward nodes
// of the gradient pass, batch_norm's moving-statistics updates and the optimizer step.
#pragma once

#include <map>
#include <string>

#include "runtime/model/model_graph.h"

namespace pipec {

struct LossSpec {
  LossKind kind = LossKind::Mse;
  std::string target_field;
  Shape target_shape;   // one example's
  bool sparse = false;  // cross_entropy with integer class labels
};

struct OptimizerSpec {
  /// The optimizer_step node's attributes: every setting of the optimizer (defaults filled in) and the
  /// schedule `lr` follows, with its given and default settings.
  OptimizerAttrs attrs;
};

/// Turns the forward graph `g` into the training step. Throws GradientError when the gradient cannot
/// be built.
void build_train_step(ModelGraph& g, const LossSpec& loss, const OptimizerSpec& optimizer);

/// The target and the loss node after a forward graph (build_train_step's first part): from the logits
/// behind a final softmax (cross_entropy) or sigmoid (binary_cross_entropy).
void add_loss(ModelGraph& g, const LossSpec& loss);

/// Marks a forward graph for inference, as Keras' `training=False`: batch_norm normalizes with its
/// moving statistics and dropout passes its input through.
void set_inference_mode(ModelGraph& g);

}  // namespace pipec

// A served model's weights never change, so the round nodes a mixed precision puts at the start of the
// graph to cast each parameter to the 16-bit compute type (compiler/train/passes/mixed_precision.cpp)
// would round the same values at every request: for one example of the mixed_bf16 chess net, rounding
// its 1.1 M weights was 60% of a call. They are done once instead, on the weights, when the model is
// loaded.
#pragma once

#include "runtime/model/model_graph.h"
#include "runtime/train/step_executor.h"

namespace pipec {

/// Rounds, in `weights`, each parameter that `g` reads only through a round node, points that node's
/// readers at the parameter and removes the node; returns how many were folded. The graph then computes
/// the same values bit for bit: rounding a rounded value changes nothing.
int fold_parameter_casts(ModelGraph& g, FlatBuffers<float>& weights);

}  // namespace pipec

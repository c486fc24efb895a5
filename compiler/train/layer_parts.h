// What a layer's node holds besides its input: the parts rules that compiler/sema/layers.def's rows
// name. Lowering (lower_model.cpp) asks the rule of a layer for its weights, in the order its node takes
// them after x, and for its outputs after the first, then creates them; the rule knows shapes and
// initializers, lowering knows names, values and records.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

/// A weight of a layer: a parameter, or a state (moving statistics) when `state`.
struct WeightPart {
  std::string name;  // after the layer's Keras name: "kernel" -> `conv2d_1/kernel`
  Shape shape;
  Init init = Init::Zeros;
  int64_t fan_in = 0, fan_out = 0;  // glorot_uniform's fans
  bool state = false;
};

/// An output after the layer's result: what its backward node reads (statistics, a mask).
struct OutputPart {
  Shape shape;
  bool batched = true;  // per example; false for one tensor per batch (batch_norm's statistics)
};

struct LayerParts {
  DType input = DType::F32;  // x as the node takes it (Keras casts float inputs to the compute dtype)
  std::vector<WeightPart> weights;
  std::vector<OutputPart> outputs;
};

/// A parts rule: from the node (its kind and the attributes lowering filled from the arguments) and x's
/// per-example shape.
using PartsRule = LayerParts (*)(const GraphNode& node, const Shape& x);

/// The parts rule of the layer builtin `builtin` (its layers.def row), or null for a name with no row.
PartsRule layer_parts_rule(std::string_view builtin);

}  // namespace pipec

// The gradient pass: reverse-mode differentiation of a model graph and its loss into the backward half
// of the training step, with one rule per node kind (gradient_rules.cpp).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

/// The gradient would have to pass a node (or, in an expr node, an instruction) that has no rule.
class GradientError : public std::runtime_error {
 public:
  GradientError(int node, std::string op, const std::string& why)
      : std::runtime_error(why), node(node), op(std::move(op)) {}
  int node;        // the forward node
  std::string op;  // the op without a rule
};

/// What a gradient rule sees: the forward node, the adjoint of each of its outputs and which inputs need
/// a gradient; it appends backward nodes to the graph and sets `grads`.
struct GradientContext {
  ModelGraph& g;
  int node_index;
  GraphNode node;           // a copy: the rule appends to g.nodes
  std::vector<int> dy;      // per output: its adjoint, or -1 (nothing downstream needs it)
  std::vector<bool> wants;  // per input: whether it needs a gradient
  std::vector<int> grads;   // per input: set by the rule, -1 when none

  /// A new gradient value shaped like `of` (a parameter's gradient is marked as such).
  int gradient_value(int of);
  /// Appends backward node `op` of this layer, linked to the forward node: its inputs are what
  /// model_ops.def says the kind reads (the forward's inputs and outputs, the adjoints in `dy`), its
  /// attributes the forward's (none for a kind without), its layer and location the forward's.
  void emit(ModelOp op, std::vector<int> outputs);
  /// A value of the forward node, or the adjoint of one of its outputs.
  int resolve(ForwardValue v) const;
};

using GradientRule = void (*)(GradientContext&);

/// The rule of a Forward or Loss node kind; null for kinds that are never differentiated.
GradientRule gradient_rule(ModelOp op);

/// Appends to `g` the nodes computing d(loss)/d(p) for every parameter in g.params and sets
/// g.param_grads (-1 for a parameter the loss does not depend on). Throws GradientError.
void append_gradients(ModelGraph& g, int loss);

}  // namespace pipec

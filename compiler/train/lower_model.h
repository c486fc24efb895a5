// Lowering of a checked `model` declaration into the forward graph of the model IR
// (runtime/model/model_graph.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/sema/program.h"
#include "runtime/model/model_graph.h"

namespace pipec {

struct LoweredModel {
  ModelGraph graph;
  /// The spec expression each node comes from (diagnostics of later passes point at it).
  std::vector<SourceRange> node_ranges;
};

/// Lowers `model` (checked without errors) for inputs with the given per-example types and `batch` rows
/// per batch (kUnknownDim when not known). Layers become layer nodes with parameters named as Keras
/// names them (see docs/design.md, "Training"); element-wise work becomes expr nodes. Reports what the
/// model IR cannot express to `diags` and returns nullopt then.
std::optional<LoweredModel> lower_model(const Program& program, const Decl& model, int64_t batch, Diagnostics& diags);

/// file:line:col of a source range, for run-time messages.
SpecLoc spec_location(const Program& program, SourceRange r);

}  // namespace pipec

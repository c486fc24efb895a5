// The passes over a training-step graph, after the gradient pass and before an executor runs it, in one
// ordered list (step_passes.cpp), one pass per file. Each rewrites the graph in place; the verifier runs
// after each, and a graph that stops verifying is a compiler bug reported with the pass's name. -O0 runs
// none: the reference executor then runs the graph exactly as the gradient pass made it.
#pragma once

#include <string>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

struct StepPass {
  const char* name;
  const char* what;  // one line for `pipec explain --passes`-style listings and the design doc
  /// Returns how many rewrites it made.
  int (*run)(ModelGraph& g);
};

/// Every step pass, in the order they run.
const std::vector<StepPass>& step_passes();

/// Runs every pass on `g`, verifying after each; throws std::logic_error naming the pass when the graph
/// no longer verifies. Returns one "name: N rewrites" line per pass.
std::vector<std::string> run_step_passes(ModelGraph& g);

// The passes.
int fuse_activation(ModelGraph& g);

}  // namespace pipec

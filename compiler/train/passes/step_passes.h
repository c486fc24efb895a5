// The passes over a training-step graph, after the gradient pass and before an executor runs it, in one
// ordered list (step_passes.cpp), one pass per file. Each rewrites the graph in place; the verifier runs
// after each, and a graph that stops verifying is a compiler bug reported with the pass's name. -O0 runs
// only the passes that change what the step computes (mixed_precision's rounding): the reference
// executor then runs the graph otherwise exactly as the gradient pass made it.
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
  /// Runs at -O0 too: it changes what the step computes, not only how fast.
  bool semantic = false;
};

/// Every step pass, in the order they run.
const std::vector<StepPass>& step_passes();

/// Runs every pass on `g` (at opt_level 0 the semantic ones only; none of the optimizations named in
/// `disabled`: `--disable-pass NAME`), verifying after each; throws std::logic_error naming the pass when
/// the graph no longer verifies. Returns one "name: N rewrites" line per pass run.
std::vector<std::string> run_step_passes(ModelGraph& g, int opt_level = 1,
                                         const std::vector<std::string>& disabled = {});

/// Whether `name` is a step pass that `--disable-pass` may skip (not a semantic one).
bool is_optional_step_pass(const std::string& name);

// The passes.
int fuse_activation(ModelGraph& g);
int mixed_precision(ModelGraph& g);
int fuse_round_into_expr(ModelGraph& g);
int fuse_round_into_expr_inputs(ModelGraph& g);

}  // namespace pipec

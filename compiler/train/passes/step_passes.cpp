#include "compiler/train/passes/step_passes.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

const std::vector<StepPass>& step_passes() {
  static const std::vector<StepPass> passes = {
      {"fuse_activation", "a relu after conv2d, conv2d_transpose or dense becomes the layer's fused activation",
       fuse_activation},
      // After fusion: a fused layer's output is rounded once, after its activation, as on a GPU.
      {"mixed_precision", "mixed_bf16 / mixed_fp16: round nodes where a GPU casts to 16 bits, and the loss scale",
       mixed_precision, true},
      // After the rounding exists: an expr's output rounded by a round node alone is rounded in the expr.
      {"fuse_round_into_expr", "a round node after an expr becomes a cast to 16 bits and back inside the expr",
       fuse_round_into_expr},
      {"fuse_round_into_expr_inputs", "a round node read by expr nodes alone goes: each reader rounds its input itself",
       fuse_round_into_expr_inputs},
  };
  return passes;
}

bool is_optional_step_pass(const std::string& name) {
  for (const StepPass& p : step_passes())
    if (!p.semantic && name == p.name) return true;
  return false;
}

std::vector<std::string> run_step_passes(ModelGraph& g, int opt_level, const std::vector<std::string>& disabled) {
  std::vector<std::string> report;
  for (const StepPass& p : step_passes()) {
    if (opt_level <= 0 && !p.semantic) continue;
    if (!p.semantic && std::find(disabled.begin(), disabled.end(), p.name) != disabled.end()) continue;
    int rewrites = p.run(g);
    report.push_back(fmt::format("{}: {} rewrite{}", p.name, rewrites, rewrites == 1 ? "" : "s"));
    if (auto problems = verify_model_graph(g); !problems.empty()) {
      std::string all;
      for (const std::string& s : problems) all += "\n  " + s;
      throw std::logic_error(
          fmt::format("the step graph does not verify after the pass {}:{}\n{}", p.name, all, print_model_graph(g)));
    }
  }
  return report;
}

}  // namespace pipec

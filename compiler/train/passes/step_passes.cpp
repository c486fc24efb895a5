#include "compiler/train/passes/step_passes.h"

#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

const std::vector<StepPass>& step_passes() {
  static const std::vector<StepPass> passes = {
      {"fuse_activation", "a relu after conv2d, conv2d_transpose or dense becomes the layer's fused activation",
       fuse_activation},
  };
  return passes;
}

std::vector<std::string> run_step_passes(ModelGraph& g) {
  std::vector<std::string> report;
  for (const StepPass& p : step_passes()) {
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

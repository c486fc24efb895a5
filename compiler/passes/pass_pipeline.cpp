#include "compiler/passes/pass_pipeline.h"

#include <algorithm>

#include "compiler/passes/algebraic_simplification.h"
#include "compiler/passes/common_subexpression_elimination.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/convert_normalize_fusion.h"
#include "compiler/passes/crop_pushdown.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/inner_pipelines.h"
#include "compiler/passes/map_batch_fusion.h"
#include "compiler/passes/map_filter_fusion.h"
#include "compiler/passes/map_fusion.h"
#include "compiler/passes/noop_elimination.h"
#include "compiler/passes/plan_edit.h"
#include "compiler/passes/png_one_hot_fusion.h"
#include "compiler/passes/prefetch_injection.h"
#include "compiler/passes/projection_pushdown.h"
#include "compiler/passes/repeated_jpeg_index.h"
#include "compiler/passes/shuffle_repeat_fusion.h"
#include "compiler/passes/vectorize_map_after_batch.h"

namespace pipec {

const std::vector<PassInfo>& pass_list() {
  // Order matters: stage fusion first (fewer, larger functions, fewer stages), then the expression passes clean up
  // what fusion put together, then fields nobody reads are dropped, then maps move after batches,
  // then dead code goes.
  static const std::vector<PassInfo> passes = {
      {"noop_elimination", noop_elimination,
       "remove stages that change nothing (repeat(1), skip(0), identity maps, ...)"},
      {"map_fusion", map_fusion, "map(f) | map(g) -> map(g . f)"},
      {"map_filter_fusion", map_filter_fusion, "map(f) | filter(p) -> one map_filter stage"},
      {"shuffle_repeat_fusion", shuffle_repeat_fusion, "shuffle(b) | repeat(n) -> one shuffle_repeat stage"},
      {"constant_folding", constant_folding, "compute instructions on constants at compile time"},
      {"algebraic_simplification", algebraic_simplification,
       "bit-exact identities: x * 1, x - 0, cast to own type, ..."},
      {"common_subexpression_elimination", common_subexpression_elimination, "reuse equal values computed twice"},
      {"projection_pushdown", projection_pushdown, "sources parse and maps compute only the fields someone reads"},
      // Crop pushdown sees the projected plan; what its rewrite leaves unused goes in dead code elimination.
      {"crop_pushdown", crop_pushdown, "a crop after decode_jpeg or decode_png decodes only its window"},
      // After crop pushdown, so the one-hot of a cropped label is made from the window's rows.
      {"png_one_hot_fusion", png_one_hot_fusion, "one_hot_colors of a decode_png is made in the decode's row loop"},
      // After crop pushdown too: the fused op reads the cropping decode's window, and its rows are the
      // stacked result's. Before vectorizing, which then sees the map as the interpreter will run it.
      {"convert_normalize_fusion", convert_normalize_fusion,
       "flip, convert_image_dtype and normalize of u8 pixels are one pass into the result's rows"},
      {"repeated_jpeg_index", repeated_jpeg_index,
       "a cropping decode_jpeg that a repeat runs again indexes each file once"},
      // Before vectorizing, projection has removed the unread (possibly ragged) fields the batch would
      // otherwise have to stack.
      {"vectorize_map_after_batch", vectorize_map_after_batch, "map(f) | batch(n) -> batch(n) | map(f, per_row = n)"},
      // What could not be vectorized (a repeat feeds a random map) still gets its batch copy done by the map's threads.
      {"map_batch_fusion", map_batch_fusion, "map(f) | batch(n) -> one map_batch stage"},
      {"dead_code_elimination", dead_code_elimination, "remove instructions no result needs"},
      {"prefetch_injection", prefetch_injection, "end the pipeline with prefetch(auto)"},
  };
  return passes;
}

bool is_pass_name(const std::string& name) {
  const auto& list = pass_list();
  return std::any_of(list.begin(), list.end(), [&](const PassInfo& p) { return name == p.name; });
}

void run_passes(Plan& plan, const PassOptions& options) {
  if (options.opt_level <= 0) return;
  clone_functions(plan);
  for (const PassInfo& pass : pass_list()) {
    if (std::find(options.disabled.begin(), options.disabled.end(), pass.name) != options.disabled.end()) continue;
    bool changed = pass.run(plan);
    if (auto problems = verify_plan(plan); !problems.empty()) {
      std::string msg = std::string("internal error: the plan does not verify after pass `") + pass.name + "`:\n";
      for (const auto& p : problems) msg += "  " + p + "\n";
      msg += print_plan(plan);
      throw PassError(msg);
    }
    if (options.log) options.log(pass.name, changed, plan);
  }
  optimize_inner_pipelines(plan, options);
}

}  // namespace pipec

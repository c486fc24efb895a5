#include "runtime/exec/stages/map_apply.h"

#include "runtime/exec/stages/native_call.h"
#include "runtime/ops/interpreter.h"

namespace pipec {

std::vector<Column> apply_stage_function(const RunContext& ctx, const Stage& stage,
                                         const std::vector<std::string>& in_fields, const Chunk& in,
                                         bool allow_native) {
  EvalContext ec;
  ec.seed = ctx.seed;
  ec.spec_dir = ctx.spec_dir;
  std::vector<Column> cols;
  // A compiled kernel when the chunk fits it (dense columns of the expected dtypes), else the interpreter.
  if (!allow_native || !stage.native || !run_native(stage, in_fields, in, ec.seed, cols))
    cols = run_function(*stage.fn, in_fields, in, ec);
  return cols;
}

}  // namespace pipec

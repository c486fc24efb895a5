// `pipec build --train`'s compile: the train block (its inference graph) and the served preprocessing
// cut from its data (compiler/compile/serving_plan.h), verified, optimized and compiled into the
// request's object file as a pipeline's kernels are.
#pragma once

#include <string>

#include "compiler/compile/compile.h"

namespace pipec {

struct ServingCompile {
  CompileResult result;  // the train block compiled (status, diagnostics); trains[0] when ok
  Plan plan;             // the served preprocessing, optimized, kernels in options.object_path
  int object_kernels = 0;
  /// Set when the spec compiled but its model cannot be served (the stage and why), or a later step
  /// failed; result.ok() is then true.
  std::string error;
};

/// `request` names the train block (request.train.block); its options say the passes and, with
/// CpuKernels::Object, the object file. The data pipeline's own kernels are not compiled.
ServingCompile compile_serving(CompileRequest request);

}  // namespace pipec

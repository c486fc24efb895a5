// Ahead-of-time kernels for `pipec build`: every compilable map/filter of a plan compiled into one
// relocatable, position-independent object file (no JIT), with the kernel of stage i exported as
// `pipec_kernel_<i>` (PipecKernelFn), and stage i of flat_map f's inner pipeline as
// `pipec_kernel_<f>_<i>` (stage_kernel.h). The object calls only libm and memset/memcpy, which the
// library it is linked into resolves as usual.
#pragma once

#include <string>

#include "runtime/plan/plan.h"

namespace pipec::codegen {

/// Writes the object to `object_path` and sets `stage.native` (symbol, input_fields, backend "aot";
/// fn stays null) on the stages it contains, those of inner pipelines too. Stages that cannot be
/// compiled keep native == null. Returns the number of kernels written; throws std::runtime_error when
/// the file cannot be written.
int emit_kernels_object(Plan& plan, const std::string& object_path);

}  // namespace pipec::codegen

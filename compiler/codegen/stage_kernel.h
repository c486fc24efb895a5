// Which map/filter stages of a plan can become native kernels, and their loop nests: the shared first
// step of the LLVM JIT, `pipec build` objects and `pipec explain`. (The CUDA generator lowers a map's
// function with the same lower_to_loop_nest, through cuda/cuda_emitter.h, and says the same things.)
#pragma once

#include <string>

#include "compiler/codegen/loop_nest.h"
#include "runtime/plan/plan.h"

namespace pipec::codegen {

/// Lowers stage `index` (a stage with an element kernel: map, filter, map_filter, map_batch, scan, ...)
/// to loop nests, resolving its params against the fields of the stage's input element. Returns false
/// with the reason when it has no element kernel or its function is not compilable (see loop_nest.h for
/// what is). A map_filter's nest has the map's fields as outputs, then the bool keep flag.
bool stage_loop_nest(const Plan& plan, int index, LoopNest& nest, std::string& why_not);

/// The kernel symbol of stage `index`: "pipec_kernel_<index>".
std::string kernel_symbol(int index);

/// The kernel symbol of stage `index` of a flat_map's inner pipeline, `within` being the flat_map stages
/// that hold it, outermost first: "pipec_kernel_<flat_map>_<index>" (no two stages of a plan and its
/// inner pipelines share one, so one object file or JIT session holds them all).
std::string kernel_symbol(const std::vector<int>& within, int index);

/// The input field index of each kernel input pointer (NativeKernel::input_fields).
std::vector<int> kernel_input_fields(const LoopNest& nest);

}  // namespace pipec::codegen

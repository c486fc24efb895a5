// The steps of compile() after lowering, shared by pipelines and a train block's data: verify, the
// on_lowered hook, the optimizer passes, kernels.
#pragma once

#include <string>

#include "compiler/compile/compile.h"

namespace pipec {

/// Verifies `out.plan` (lowered from `decl`), then optimizes it and attaches kernels as `o` asks. False
/// with `error` set when a step fails: every failure here is a compiler bug or an I/O problem, never a
/// mistake in the spec (the checker has accepted it).
bool finish_plan(const Decl& decl, const CompileOptions& o, CompiledPipeline& out, std::string& error);

}  // namespace pipec

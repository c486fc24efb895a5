// The steps of compile() after lowering, shared by pipelines and a train block's data: multi_worker's
// sharding (not for validation data), verify, the on_lowered hook, the optimizer passes, kernels.
#pragma once

#include <string>

#include "compiler/compile/compile.h"

namespace pipec {

/// Verifies `out.plan` (lowered from `decl`), then optimizes it and attaches kernels as `o` asks. False
/// with `error` set when a step fails: every failure here is a compiler bug or an I/O problem, never a
/// mistake in the spec (the checker has accepted it).
bool finish_plan(const Decl& decl, const CompileOptions& o, CompiledPipeline& out, std::string& error);

/// CompileOptions::shard: replaces the lowered `out.plan` with the plan of that worker and sets out.shard;
/// without it, nothing. False with r's status (ShardError, or InternalError for a bad worker index),
/// error and error_decl set when the plan cannot be sharded so.
bool shard_for_worker(const CompileOptions& o, CompiledPipeline& out, CompileResult& r);

}  // namespace pipec

// The train steps of compile(): a train block's step graph (compiler/train), and for the Train target
// its data pipeline, with the repeat its length needs, through the pipeline steps.
#pragma once

#include "compiler/compile/compile.h"

namespace pipec {

/// Whether the main file declares a train block.
bool has_train_block(const Program& program);

/// Every train block of the main file to its step graph, into `r.trains`. What cannot be trained (an op
/// without a gradient on the way to the parameters, random ops in a model) goes to the diagnostics;
/// `r.status` becomes SpecErrors then, or InternalError for a step graph that does not verify. Above
/// -O0 the step passes (compiler/train/passes) rewrite each graph.
void compile_train_graphs(CompileResult& r, const PassOptions& passes);

/// The Train target: the block the request names, its step graph and its data plan (r.trains[0],
/// r.pipelines[0]). Sets `r.status` and `r.error` when a step fails.
void compile_train_target(const CompileRequest& request, CompileResult& r);

}  // namespace pipec

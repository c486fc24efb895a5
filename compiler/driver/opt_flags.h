// The optimizer flags of `pipec explain`, `run` and `build`: -O0 / -O1 and --disable-pass NAME.
#pragma once

#include "compiler/driver/cli.h"
#include "compiler/passes/pass_pipeline.h"

namespace pipec {

/// Declares -O LEVEL and --disable-pass NAME (repeatable; an unknown name is an error that lists the
/// passes) on `app`, writing into `out`.
void add_opt_flags(CLI::App& app, PassOptions& out);

}  // namespace pipec

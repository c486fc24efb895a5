// What the subcommands print about a compilation (compiler/compile) and the exit code it means.
#pragma once

#include <optional>
#include <string>

#include "compiler/compile/compile.h"
#include "compiler/driver/spec_options.h"

namespace pipec {

/// Prints the diagnostics of `result` (unless `print_diagnostics` is false) and, when it failed, why,
/// as `pipec COMMAND: ...`. Returns the exit code when the command should stop (1: errors in the spec,
/// 2: an unreadable spec, no such pipeline, an internal error), nullopt when it compiled.
std::optional<int> report_compile(const CompileResult& result, const std::string& command, const SpecFlags& flags,
                                  bool print_diagnostics = true);

}  // namespace pipec

// The optimizer flags `pipec explain` and `pipec run` share: -O0 / -O1 and --disable-pass=NAME.
#pragma once

#include <string>
#include <vector>

#include "compiler/passes/pass_pipeline.h"

namespace pipec {

/// The flag names to hand parse_spec_options as extra flags.
const std::vector<std::string>& opt_flag_names();

/// Lines for a command's --help.
extern const char* const kOptFlagsHelp;

/// Takes -O0, -O1 and --disable-pass=NAME (or --disable-pass NAME, repeatable) out of `args` into
/// `out`. An unknown pass name is a usage error: prints it with the valid names and returns false.
bool take_opt_flags(std::vector<std::string>& args, PassOptions& out, const char* command);

}  // namespace pipec

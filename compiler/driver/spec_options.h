// Options shared by the subcommands that read a spec (check, explain, run, build).
#pragma once

#include <string>
#include <vector>

#include "compiler/driver/commands.h"
#include "compiler/sema/program.h"

namespace pipec {

struct SpecOptions {
  CheckOptions check;
  bool color = false;
  bool quiet = false;
};

/// Parses the common flags (-I DIR, -w/--no-warnings, --color=WHEN, -q/--quiet) out of `args`; other
/// arguments starting with '-' are accepted only when listed in `extra_flags` (and then left in
/// `rest` with everything else). Prints an error and returns false on a bad flag.
bool parse_spec_options(const Args& args, SpecOptions& out, std::vector<std::string>& rest, const char* command,
                        const std::vector<std::string>& extra_flags);

}  // namespace pipec

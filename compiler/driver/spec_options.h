// The flags of the subcommands that read a spec (check, explain, run, build): -I DIR, -D NAME=VALUE,
// -w, --color WHEN, -q.
#pragma once

#include <string>
#include <vector>

#include "compiler/driver/cli.h"
#include "compiler/sema/program.h"

namespace pipec {

struct SpecFlags {
  std::vector<std::string> import_dirs;
  std::vector<std::string> defines;  // NAME=VALUE
  bool no_warnings = false;
  std::string color = "auto";
  bool quiet = false;

  /// The checker's options: import folders, warnings and the -D overrides.
  CheckOptions check_options() const;
  /// Whether diagnostics are coloured (--color, or auto: stderr is a terminal).
  bool color_output() const;
};

/// Declares the flags on `app`, writing into `flags`. `quiet_help` says what -q leaves out.
void add_spec_flags(CLI::App& app, SpecFlags& flags, const std::string& quiet_help);

}  // namespace pipec

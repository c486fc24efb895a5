// `pipec check FILE...`: parse and type-check specs, print diagnostics.
#include <unistd.h>

#include <iostream>

#include "compiler/driver/commands.h"
#include "compiler/driver/spec_options.h"
#include "compiler/sema/program.h"
#include "compiler/train/lower_train.h"

namespace pipec {

static const char* kCheckUsage =
    "usage: pipec check [options] FILE...\n"
    "\n"
    "Parses and type-checks each spec and prints its diagnostics.\n"
    "Exit code: 0 when every file is clean (warnings allowed), 1 when a spec has errors, 2 on usage or I/O errors.\n"
    "\n"
    "options:\n"
    "  -I DIR            also search DIR for `import name`\n"
    "  -w, --no-warnings do not report warnings\n"
    "  --color=WHEN      always, never or auto (default: auto, when stderr is a terminal)\n"
    "  -q, --quiet       print nothing; only the exit code tells\n";

int cmd_check(const Args& args) {
  if (wants_help(args)) {
    std::cout << kCheckUsage;
    return 0;
  }
  SpecOptions opts;
  std::vector<std::string> files;
  if (!parse_spec_options(args, opts, files, "check", {})) return 2;
  if (files.empty()) {
    std::cerr << "pipec check: no input files\n" << kCheckUsage;
    return 2;
  }
  int rc = 0;
  for (const auto& f : files) {
    auto program = check_file(f, opts.check);
    if (!program->io_error.empty()) {
      std::cerr << "pipec check: " << program->io_error << "\n";
      rc = 2;
      continue;
    }
    // Train blocks are compiled too (gradients, model shapes), so what `pipec run` would refuse is
    // reported here.
    lower_train_blocks(*program);
    if (!opts.quiet) program->diags.print(std::cerr, opts.color);
    if (program->diags.has_errors() && rc == 0) rc = 1;
  }
  return rc;
}

}  // namespace pipec

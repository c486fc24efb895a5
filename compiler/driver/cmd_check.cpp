// `pipec check FILE...`: parse and type-check specs, print diagnostics.
#include <algorithm>

#include "compiler/compile/compile.h"
#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/compile_report.h"
#include "compiler/driver/spec_options.h"

namespace pipec {

int cmd_check(const Args& args) {
  SpecFlags flags;
  std::vector<std::string> files;
  auto app = make_command("check", "FILE...", "Parses and type-checks each spec and prints its diagnostics.");
  add_spec_flags(*app, flags, "print nothing; only the exit code tells");
  app->add_option("FILE", files, "the specs")->required();
  app->footer(
      "exit code: 0 when every file is clean (warnings allowed), 1 when a spec has errors, 2 on usage or I/O errors");
  if (auto code = parse_command_line(*app, args)) return *code;

  int rc = 0;
  for (const auto& f : files) {
    CompileResult result = compile(check_request(f, flags.check_options()));
    if (auto code = report_compile(result, "check", flags, !flags.quiet)) rc = std::max(rc, *code);
  }
  return rc;
}

}  // namespace pipec

#include "compiler/driver/opt_flags.h"

#include <fmt/format.h>

#include "compiler/train/passes/step_passes.h"

namespace pipec {

namespace {

CLI::Validator pass_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        if (is_pass_name(name) || is_optional_step_pass(name)) return "";
        std::string msg = fmt::format("unknown pass `{}`; the passes are:", name);
        for (const PassInfo& p : pass_list()) msg += std::string(" ") + p.name;
        // A train block's step graph has its own (the semantic ones, such as mixed_precision, always run).
        for (const StepPass& p : step_passes())
          if (!p.semantic) msg += std::string(" ") + p.name;
        return msg;
      },
      "");
}

}  // namespace

void add_opt_flags(CLI::App& app, PassOptions& out) {
  app.add_option("-O", out.opt_level,
                 "-O0: no optimization, the plan as lowered, run by the interpreter (the reference);\n"
                 "-O1, the default: run the optimizer passes")
      ->type_name("LEVEL")
      ->check(in_range(0, 1));
  add_repeatable(
      app, "--disable-pass", out.disabled,
      "skip one optimizer pass (repeatable; `pipec explain --passes` shows them) or step pass of a train block", "NAME")
      ->check(pass_name());
}

}  // namespace pipec

#include "compiler/driver/opt_flags.h"

#include <fmt/format.h>

namespace pipec {

namespace {

CLI::Validator pass_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        if (is_pass_name(name)) return "";
        std::string msg = fmt::format("unknown pass `{}`; the passes are:", name);
        for (const PassInfo& p : pass_list()) msg += std::string(" ") + p.name;
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
  add_repeatable(app, "--disable-pass", out.disabled,
                 "skip one optimizer pass (repeatable; `pipec explain --passes` shows them)", "NAME")
      ->check(pass_name());
}

}  // namespace pipec

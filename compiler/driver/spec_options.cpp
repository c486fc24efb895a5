#include "compiler/driver/spec_options.h"

#include <unistd.h>

#include <fmt/format.h>

namespace pipec {

namespace {

// NAME=VALUE with a name; what VALUE means is the checker's business (it is Pipe source).
CLI::Validator name_equals_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        size_t eq = text.find('=');
        if (eq == std::string::npos || eq == 0) return fmt::format("must be NAME=VALUE, not `{}`", text);
        return "";
      },
      "");
}

}  // namespace

CheckOptions SpecFlags::check_options() const {
  CheckOptions o;
  o.import_paths = import_dirs;
  o.warnings = !no_warnings;
  for (const std::string& d : defines) {
    size_t eq = d.find('=');
    o.const_overrides.push_back({d.substr(0, eq), d.substr(eq + 1)});
  }
  return o;
}

bool SpecFlags::color_output() const { return color == "always" || (color == "auto" && isatty(STDERR_FILENO)); }

void add_spec_flags(CLI::App& app, SpecFlags& flags, const std::string& quiet_help) {
  add_repeatable(app, "-I", flags.import_dirs, "also search DIR for `import name` (repeatable)", "DIR");
  add_repeatable(app, "-D", flags.defines,
                 "give const NAME of the spec the value VALUE (a literal or constant expression of the\n"
                 "const's type; repeatable): -D BATCH=64",
                 "NAME=VALUE")
      ->check(name_equals_value());
  app.add_flag("-w,--no-warnings", flags.no_warnings, "do not report warnings");
  app.add_option("--color", flags.color, "colour the diagnostics: always, never, or when stderr is a terminal")
      ->type_name("WHEN")
      ->check(one_of({"always", "never", "auto"}))
      ->capture_default_str();
  app.add_flag("-q,--quiet", flags.quiet, quiet_help);
}

}  // namespace pipec

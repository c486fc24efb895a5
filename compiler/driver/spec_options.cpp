#include "compiler/driver/spec_options.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace pipec {

bool parse_spec_options(const Args& args, SpecOptions& out, std::vector<std::string>& rest, const char* command,
                        const std::vector<std::string>& extra_flags) {
  std::string color = "auto";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-I") {
      if (i + 1 >= args.size()) {
        std::cerr << "pipec " << command << ": -I needs a folder\n";
        return false;
      }
      out.check.import_paths.push_back(args[++i]);
    } else if (a.rfind("-I", 0) == 0 && a.size() > 2) {
      out.check.import_paths.push_back(a.substr(2));
    } else if (a == "-w" || a == "--no-warnings") {
      out.check.warnings = false;
    } else if (a == "-q" || a == "--quiet") {
      out.quiet = true;
    } else if (a.rfind("--color=", 0) == 0) {
      color = a.substr(8);
      if (color != "always" && color != "never" && color != "auto") {
        std::cerr << "pipec " << command << ": --color takes always, never or auto\n";
        return false;
      }
    } else if (a.size() > 1 && a[0] == '-') {
      std::string name = a.substr(0, a.find('='));
      if (std::find(extra_flags.begin(), extra_flags.end(), name) == extra_flags.end()) {
        std::cerr << "pipec " << command << ": unknown option " << a << " (see pipec " << command << " --help)\n";
        return false;
      }
      rest.push_back(a);
    } else {
      rest.push_back(a);
    }
  }
  out.color = color == "always" || (color == "auto" && isatty(STDERR_FILENO));
  return true;
}

}  // namespace pipec

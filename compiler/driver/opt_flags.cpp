#include "compiler/driver/opt_flags.h"

#include <iostream>

namespace pipec {

const std::vector<std::string>& opt_flag_names() {
  static const std::vector<std::string> names = {"-O0", "-O1", "--disable-pass"};
  return names;
}

const char* const kOptFlagsHelp =
    "  -O0                    no optimization: the plan as lowered, run by the interpreter (the reference)\n"
    "  -O1                    run the optimizer passes (the default)\n"
    "  --disable-pass=NAME    skip one optimizer pass (repeatable; `pipec explain --passes` shows them)\n";

bool take_opt_flags(std::vector<std::string>& args, PassOptions& out, const char* command) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string name;
    if (a == "-O0" || a == "-O1") {
      out.opt_level = a[2] - '0';
      continue;
    }
    if (a == "--disable-pass") {
      if (i + 1 >= args.size()) {
        std::cerr << "pipec " << command << ": --disable-pass needs a pass name\n";
        return false;
      }
      name = args[++i];
    } else if (a.rfind("--disable-pass=", 0) == 0) {
      name = a.substr(15);
    } else {
      rest.push_back(a);
      continue;
    }
    if (!is_pass_name(name)) {
      std::cerr << "pipec " << command << ": unknown pass `" << name << "`; the passes are:";
      for (const PassInfo& p : pass_list()) std::cerr << " " << p.name;
      std::cerr << "\n";
      return false;
    }
    out.disabled.push_back(name);
  }
  args = std::move(rest);
  return true;
}

}  // namespace pipec

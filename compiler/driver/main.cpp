// The `pipec` command line: dispatches to the subcommands of command_list() (compiler/driver/cmd_*.cpp),
// each of which declares its own flags (compiler/driver/cli.h).
#include <exception>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "compiler/driver/commands.h"
#include "compiler/driver/installed_layout.h"
#include "compiler/driver/openmp_waits.h"

namespace {

std::string usage() {
  std::string out =
      "pipec - a compiler and runtime for machine-learning input pipelines\n"
      "\n"
      "usage: pipec <command> [options] [args]\n"
      "\n"
      "commands:\n";
  for (const pipec::Command& c : pipec::command_list()) out += fmt::format("  {:<18}{}\n", c.synopsis, c.summary);
  out +=
      "\n"
      "Run `pipec <command> --help` for the options of a command.\n"
      "options:\n"
      "  --version         print the version\n"
      "  -h, --help        print this help\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pipec;
  use_installed_layout();
  if (argc < 2) {
    std::cerr << usage();
    return 2;
  }
  std::string cmd = argv[1];
  Args args(argv + 2, argv + argc);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::cout << usage();
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "pipec " << PIPEC_VERSION << "\n";
    return 0;
  }
  // Training's kernels run on OpenMP threads, which must not spin on a shared machine: `pipec run`
  // re-executes itself with passive waits when it may train (cmd_run decides, from its flags).
  if (cmd == "run") remember_command_line(argv);
  for (const Command& c : command_list()) {
    if (cmd != c.name) continue;
    // Errors in specs are diagnostics; an exception reaching here is a bug, reported without a crash.
    try {
      return c.run(args);
    } catch (const std::exception& e) {
      std::cerr << "pipec " << cmd << ": internal error: " << e.what() << "\n";
      return 2;
    }
  }
  std::cerr << "pipec: unknown command `" << cmd << "`\n\n" << usage();
  return 2;
}

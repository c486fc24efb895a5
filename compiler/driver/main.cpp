// The `pipec` command line: dispatches to the subcommands in compiler/driver/cmd_*.cpp.
#include <exception>
#include <iostream>
#include <map>
#include <string>

#include "compiler/driver/commands.h"

namespace {

const char* kUsage =
    "pipec - a compiler and runtime for machine-learning input pipelines\n"
    "\n"
    "usage: pipec <command> [options] [args]\n"
    "\n"
    "commands:\n"
    "  build FILE -o L   compile a pipeline into a shared library with a C ABI (pipe.h, DLPack)\n"
    "  check FILE...     type-check specs and report diagnostics\n"
    "  explain FILE      print the plan: each stage with its element type, and the IR of each map\n"
    "  fmt FILE...       format specs canonically (-w to rewrite, --check to verify)\n"
    "  run FILE          run a pipeline on the CPU (progress, summary, --output for NumPy files)\n"
    "  lsp               run the language server on stdin/stdout\n"
    "\n"
    "Run `pipec <command> --help` for the options of a command.\n"
    "options:\n"
    "  --version         print the version\n"
    "  -h, --help        print this help\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace pipec;
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd = argv[1];
  Args args(argv + 2, argv + argc);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "pipec " << PIPEC_VERSION << "\n";
    return 0;
  }
  const std::map<std::string, int (*)(const Args&)> commands = {
      {"build", cmd_build}, {"check", cmd_check}, {"explain", cmd_explain}, {"fmt", cmd_fmt}, {"lsp", cmd_lsp}, {"run", cmd_run},
  };
  auto it = commands.find(cmd);
  if (it == commands.end()) {
    std::cerr << "pipec: unknown command `" << cmd << "`\n\n" << kUsage;
    return 2;
  }
  // Errors in specs are diagnostics; an exception reaching here is a bug, reported without a crash.
  try {
    return it->second(args);
  } catch (const std::exception& e) {
    std::cerr << "pipec " << cmd << ": internal error: " << e.what() << "\n";
    return 2;
  }
}

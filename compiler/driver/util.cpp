#include <iostream>
#include <sstream>

#include "compiler/driver/commands.h"
#include "compiler/front/source.h"

namespace pipec {

const std::vector<Command>& command_list() {
  static const std::vector<Command> commands = {
      {"build", "build SPEC -o L", "compile a pipeline into a shared library with a C ABI (pipe.h, DLPack)", cmd_build},
      {"check", "check FILE...", "type-check specs and report diagnostics", cmd_check},
      {"explain", "explain FILE",
       "print the plan: each stage with its element type, the IR of each map, each train step", cmd_explain},
      {"fmt", "fmt FILE...", "format specs canonically (-w to rewrite, --check to verify)", cmd_fmt},
      {"run", "run SPEC", "train a train block, or run a pipeline (progress, summary, --output for NumPy files)",
       cmd_run},
      {"doctor", "doctor", "check the GPU path: driver, GPUs, and the CUDA libraries found or missing", cmd_doctor},
      {"lsp", "lsp", "run the language server on stdin/stdout", cmd_lsp},
  };
  return commands;
}

bool read_text_file(const std::string& path, std::string& text, std::string& error) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
    return true;
  }
  return read_source_file(path, text, error);
}

}  // namespace pipec

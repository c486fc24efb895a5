// The `pipec` subcommands. Each takes the arguments after its name and returns the process exit code:
// 0 success, 1 errors in the spec (or `fmt --check` found unformatted files), 2 usage or I/O errors.
#pragma once

#include <string>
#include <vector>

namespace pipec {

using Args = std::vector<std::string>;

int cmd_build(const Args& args);    // compiler/driver/cmd_build.cpp
int cmd_check(const Args& args);    // compiler/driver/cmd_check.cpp
int cmd_doctor(const Args& args);   // compiler/driver/cmd_doctor.cpp
int cmd_explain(const Args& args);  // compiler/driver/cmd_explain.cpp
int cmd_fmt(const Args& args);      // compiler/driver/cmd_fmt.cpp
int cmd_lsp(const Args& args);      // compiler/driver/cmd_lsp.cpp
int cmd_run(const Args& args);      // compiler/driver/cmd_run.cpp

struct Command {
  const char* name;
  const char* synopsis;  // "run SPEC"
  const char* summary;   // one line for `pipec --help`
  int (*run)(const Args& args);
};

/// Every subcommand, in the order `pipec --help` lists them.
const std::vector<Command>& command_list();

/// Reads a whole file; false (with `error` set to a readable reason) when it cannot.
bool read_text_file(const std::string& path, std::string& text, std::string& error);

}  // namespace pipec

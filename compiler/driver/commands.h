// The `pipec` subcommands. Each takes the arguments after its name and returns the process exit code:
// 0 success, 1 errors in the spec (or `fmt --check` found unformatted files), 2 usage or I/O errors.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pipec {

using Args = std::vector<std::string>;

int cmd_build(const Args& args);    // compiler/driver/cmd_build.cpp
int cmd_check(const Args& args);    // compiler/driver/cmd_check.cpp
int cmd_explain(const Args& args);  // compiler/driver/cmd_explain.cpp
int cmd_fmt(const Args& args);      // compiler/driver/cmd_fmt.cpp
int cmd_lsp(const Args& args);      // compiler/driver/cmd_lsp.cpp
int cmd_run(const Args& args);      // compiler/driver/cmd_run.cpp

/// `pipec run` on a spec with a train block trains (compiler/driver/cmd_train.cpp); nullopt when the
/// arguments ask for a pipeline run instead. kTrainUsage is its part of `pipec run --help`.
std::optional<int> run_training_if_asked(const Args& args);
extern const char* kTrainUsage;

/// True when `args` asks for help (-h / --help).
bool wants_help(const Args& args);

/// Reads a whole file; false (with `error` set to a readable reason) when it cannot.
bool read_text_file(const std::string& path, std::string& text, std::string& error);

}  // namespace pipec

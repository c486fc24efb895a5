// The command line of each `pipec` subcommand is a CLI11 app: every flag is declared once, with its
// help text and its checks, and the help page and the error messages come from that declaration.
//
//   auto app = make_command("run", "SPEC", kAbout);
//   app->add_option("--take", take, "stop after N output elements")->check(in_range(-1, INT64_MAX));
//   if (auto code = parse_command_line(*app, args)) return *code;
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/driver/commands.h"

namespace pipec {

/// An app for `pipec NAME`, whose usage line reads `usage: pipec NAME [options] OPERANDS` and whose
/// help page shows `about` and then the options. `-h, --help` is there already.
std::unique_ptr<CLI::App> make_command(const std::string& name, const std::string& operands, const std::string& about);

/// A repeatable option collecting one word per use into a vector (`-I a -I b`): `-I a b` does not take
/// `b` as a second folder, it leaves it to the operands.
CLI::Option* add_repeatable(CLI::App& app, const std::string& name, std::vector<std::string>& into,
                            const std::string& help, const std::string& value_name);

/// Parses `args` (the words after the subcommand). nullopt: go on. Otherwise the exit code to return:
/// 0 after printing the help page (-h, --help) to stdout, 2 after printing a usage error to stderr.
std::optional<int> parse_command_line(CLI::App& app, const Args& args);

/// An integer flag's range, both ends included: its errors say `must be between 1 and 1024, not 0`.
CLI::Validator in_range(int64_t lo, int64_t hi);

/// A word from `choices`: its errors say `must be auto, cpu or gpu, not `tpu``.
CLI::Validator one_of(std::vector<std::string> choices);

/// "a, b or c".
std::string spoken_list(const std::vector<std::string>& words);

}  // namespace pipec

// Parsing: source text -> AST, with syntax errors reported as diagnostics.
#pragma once

#include <memory>
#include <string>

#include "compiler/front/ast.h"
#include "compiler/front/diagnostics.h"

namespace pipec {

/// Parses file `file_id` of `sources`. Always returns a module: declarations that failed to parse are
/// left out and their errors reported to `diags`; parsing resumes at the next declaration, so one run
/// reports several errors. Never throws and never recurses without bound (deep nesting is an error).
std::unique_ptr<Module> parse_module(const SourceManager& sources, uint32_t file_id, Diagnostics& diags);

/// Parses one expression: the bytes of file `file_id` from `begin` to the end (the VALUE of a
/// `-D NAME=VALUE` override, whose file holds the whole `-D NAME=VALUE`). Ranges are offsets in the
/// whole file. Returns null when the text is not exactly one expression; its errors are reported.
ExprPtr parse_expression(const SourceManager& sources, uint32_t file_id, uint32_t begin, Diagnostics& diags);

/// For tests of the parser itself: `text` parsed as parse_module does, as ANTLR's parse tree (LISP form)
/// followed by the diagnostics' messages, and whether the first stage parsed it (compiler/front/parser.cpp
/// parse_two_stages). `greedy_first_stage` false runs the first stage with ANTLR's own prediction instead
/// of compiler/front/greedy_prediction.h.
struct ParseTreeText {
  std::string tree;
  bool first_stage_parsed = false;
};
ParseTreeText parse_tree_text(const std::string& text, bool greedy_first_stage);

/// How deeply expressions may nest before `nesting_too_deep` is reported.
constexpr int kMaxNestingDepth = 256;

}  // namespace pipec

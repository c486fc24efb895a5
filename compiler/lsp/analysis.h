// The language features of the server, on checked programs and in compiler terms (byte offsets and
// SourceRanges); server.cpp turns them into LSP messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/front/ast.h"
#include "compiler/sema/program.h"

namespace pipec::lsp {

struct HoverResult {
  std::string markdown;
  SourceRange range;  // what the hover describes
};

/// Hover text for the thing at `offset` of the main file: the type of an expression, a declaration's
/// signature or element type, a builtin's signature and doc.
std::optional<HoverResult> hover_at(const Program& program, uint32_t offset);

/// Where the name at `offset` is defined (possibly in an imported file). Empty when unknown.
std::vector<SourceRange> definition_at(const Program& program, uint32_t offset);

/// Every use of the symbol at `offset`, across the main file and its imports.
std::vector<SourceRange> references_at(const Program& program, uint32_t offset, bool include_declaration);

enum class CompletionKind {
  Function,
  Field,
  Variable,
  Constant,
  Keyword,
  Module,
  Struct,
  Class,
  Event,
  TypeName,
  Property,
  EnumMember
};

struct CompletionEntry {
  std::string label;
  CompletionKind kind = CompletionKind::Variable;
  std::string detail;         // signature or type
  std::string documentation;  // markdown
};

/// Completion at byte `offset` of `text` (the unsaved buffer of `path`), in the order to offer it: what
/// the checker would accept there (completion.cpp). `current` is the program checked from `text` (may be
/// null). After `r.`, a copy of the text with a field name filled in is checked to find the type of `r`;
/// when that copy does not parse, the nearest lambda parameter `r` of `current` or of `last_good` (the
/// last version without syntax errors, may be null) is used.
std::vector<CompletionEntry> complete_at(const std::string& path, const std::string& text, uint32_t offset,
                                         const Program* current, const Program* last_good = nullptr);

struct SignatureHelp {
  std::string label;                                  // "batch(input, size, drop_remainder = false)"
  std::string documentation;                          // markdown
  std::vector<std::pair<uint32_t, uint32_t>> params;  // [begin, end) of each parameter in `label`
  int active_parameter = -1;                          // -1: none
};

/// Inside the parentheses of a call at byte `offset` of `text`: the signature of what the checker
/// resolved the callee to, and the parameter the cursor is on (signature_help.cpp). `current` is the
/// program checked from `text` (may be null); an unfinished call is found in a copy of the text with
/// the declaration cut after the cursor and its brackets closed.
std::optional<SignatureHelp> signature_help_at(const std::string& path, const std::string& text, uint32_t offset,
                                               const Program* current);

/// "fn name(a: f32[3], b: i64) -> f32", "model net(x: f32[8]) -> f32[1]".
std::string decl_signature(const Decl& d);
std::string type_syntax_to_string(const TypeSyntax& t);
/// "dataset of {x: f32}" for datasets, the type otherwise.
std::string describe_type(const Type& t);
/// The element of a dataset type, printed; "" for anything else.
std::string dataset_element(const Type& t);

/// The LSP semantic token legend (token types and modifiers, in index order).
const std::vector<std::string>& semantic_token_types();
const std::vector<std::string>& semantic_token_modifiers();

/// The LSP-encoded semantic tokens of `text` (5 integers per token, positions relative to the previous
/// token, characters in UTF-16 code units). `module` (may be null) refines names: parameters, fields,
/// builtins, declarations.
std::vector<uint32_t> semantic_tokens(const std::string& text, const Module* module);

}  // namespace pipec::lsp

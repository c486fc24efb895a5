// A checked program: the main spec, the files it imports, their diagnostics and the global names.
//
// `check_file` / `check_text` are the one entry point for the command line, the language server and
// the tests: parse every file (following imports), resolve names, evaluate constants and type every
// expression, stage and declaration, annotating the AST in place.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/front/ast.h"
#include "compiler/front/diagnostics.h"
#include "compiler/sema/name_rules.h"

namespace pipec {

/// `-D NAME=VALUE`: the const NAME of the main spec takes VALUE (Pipe source: a literal or a constant
/// expression) instead of the value the spec gives it. The value must fit the const's type (the
/// declared one, or that of the spec's own value) and applies before anything reads the const, so
/// shapes that depend on it follow.
struct ConstOverride {
  std::string name;
  std::string value;
};

struct CheckOptions {
  /// Folders searched for `import name` (name.pipe) after the importing file's own folder.
  /// The stdlib folder is always searched last.
  std::vector<std::string> import_paths;
  /// Report warnings (unused declarations, shadowing).
  bool warnings = true;
  /// `-D NAME=VALUE` overrides, in command-line order.
  std::vector<ConstOverride> const_overrides;
  /// A byte offset of the main file where a name starts: the checker records in Program::name_site
  /// what it knew there and which names it would have accepted (the language server's completion).
  std::optional<uint32_t> name_probe;
};

/// A `-D NAME=VALUE` as the checker sees it: its text is a source file of its own, named
/// `<command line>` and holding `-D NAME=VALUE`, so diagnostics point into what was typed.
struct ParsedOverride {
  std::string name;
  SourceRange name_range;
  ExprPtr value;  // null when VALUE is not one expression (that error is reported)
};

struct Program {
  SourceManager sources;
  Diagnostics diags{sources};
  /// modules[0] is the main file; imports follow in load order.
  std::vector<std::unique_ptr<Module>> modules;
  /// Every named top-level declaration, main file and imports alike.
  std::map<std::string, const Decl*> globals;
  /// Set when the main file itself could not be read (a usage/I-O error, not an error in a spec).
  std::string io_error;
  /// What the shorthand record fields (`{ board }`) refer to; RecordFieldSyntax::shorthand_target points
  /// here (a deque keeps the addresses stable).
  std::deque<Binding> shorthand_bindings;
  /// The -D overrides of CheckOptions, parsed.
  std::vector<ParsedOverride> const_overrides;
  /// Set when CheckOptions::name_probe named a name the checker resolved.
  std::optional<NameSite> name_site;

  const Module& main() const { return *modules.at(0); }
  /// The declaration called `name`, or null.
  const Decl* global(const std::string& name) const;
};

/// Reads `path` from disk and checks it. An unreadable main file is reported as a diagnostic with no
/// location (the command line turns it into exit code 2).
std::unique_ptr<Program> check_file(const std::string& path, const CheckOptions& options = {});

/// Checks `text` as if it were the contents of `path` (the language server's unsaved buffers).
std::unique_ptr<Program> check_text(const std::string& path, std::string text, const CheckOptions& options = {});

/// The stdlib folder compiled into this build (overridable with the PIPEC_STDLIB environment variable).
std::string stdlib_dir();

}  // namespace pipec

// A buffer compiled for the editor: the same compile() `pipec check` runs (check_request), so the
// diagnostics the server publishes are those `pipec check` prints, the train blocks' included (an op
// without a gradient, a random op in a model: errors found when the step graph is built, after the
// checker).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "compiler/compile/compile.h"

namespace pipec::lsp {

/// A failure of compile() that is no diagnostic of the spec (a step graph that does not verify: a
/// compiler bug). `pipec check` prints it as `pipec check: internal error: ...`; the editor shows it
/// as an error on the name of the declaration it is about, or at the start of the file.
struct CompileFailure {
  std::string message;
  SourceRange range;
};

struct CompiledDocument {
  std::unique_ptr<Program> program;  // the checked program; its diagnostics include the train blocks'
  std::optional<CompileFailure> failure;
};

/// Compiles `text`, the buffer of `path`, as `pipec check` compiles a spec (CheckOnly: the checker,
/// then each train block's step graph; no pipeline is lowered and no kernel compiled).
CompiledDocument compile_document(const std::string& path, const std::string& text);

/// The failure `r` reports beyond its diagnostics, if any (compile_document uses it; exposed for tests).
std::optional<CompileFailure> compile_failure(const CompileResult& r);

}  // namespace pipec::lsp

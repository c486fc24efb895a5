#include "compiler/lsp/compile_document.h"

#include <exception>

namespace pipec::lsp {

std::optional<CompileFailure> compile_failure(const CompileResult& r) {
  if (r.status == CompileStatus::Ok || r.status == CompileStatus::SpecErrors) return std::nullopt;
  CompileFailure f;
  f.message = r.error.empty() ? "internal error: the spec did not compile and nothing says why" : r.error;
  while (!f.message.empty() && f.message.back() == '\n') f.message.pop_back();
  uint32_t main_file = r.program && !r.program->modules.empty() ? r.program->main().file : 0;
  f.range = {main_file, 0, 0};
  if (r.error_decl && r.error_decl->name_range.valid() && r.error_decl->name_range.file == main_file)
    f.range = r.error_decl->name_range;
  return f;
}

CompiledDocument compile_document(const std::string& path, const std::string& text) {
  CompiledDocument doc;
  try {
    CompileResult r = compile(check_request(path, {}, text));
    doc.failure = compile_failure(r);
    doc.program = std::move(r.program);
  } catch (const std::exception& e) {
    // compile() throws for no problem of a spec, so this is a compiler bug: say so, and keep hover and
    // completion working on the checked program.
    doc.program = check_text(path, text);
    uint32_t main_file = doc.program->modules.empty() ? 0 : doc.program->main().file;
    doc.failure = CompileFailure{std::string("internal error: ") + e.what(), {main_file, 0, 0}};
  }
  return doc;
}

}  // namespace pipec::lsp

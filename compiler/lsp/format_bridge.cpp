// textDocument/formatting: runs the project's formatter (compiler/fmt) on an unsaved buffer.
#include "compiler/lsp/server.h"

#if __has_include("compiler/fmt/formatter.h")
#define PIPEC_LSP_HAVE_FORMATTER 1
#include "compiler/fmt/formatter.h"
#include "compiler/front/parser.h"
#endif

namespace pipec::lsp {

bool formatting_available() {
#ifdef PIPEC_LSP_HAVE_FORMATTER
  return true;
#else
  return false;
#endif
}

std::optional<std::string> format_document_text(const std::string& path, const std::string& text, std::string& error) {
#ifdef PIPEC_LSP_HAVE_FORMATTER
  SourceManager sources;
  uint32_t id = sources.add(path, text);
  Diagnostics diags(sources);
  std::unique_ptr<Module> module = parse_module(sources, id, diags);
  if (diags.has_errors()) {
    error = "the file has syntax errors; fix them before formatting";
    return std::nullopt;
  }
  return format_module(*module, sources.file(id));
#else
  (void)path;
  (void)text;
  error = "this build of pipec has no formatter";
  return std::nullopt;
#endif
}

}  // namespace pipec::lsp

// libFuzzer target for the front end: arbitrary bytes as a spec, through the parser alone (and its
// greedy first stage against ANTLR's prediction), then through the whole of `pipec check` (parse,
// imports, names, constants, types), then, for specs that check clean, through what `pipec explain`
// does (lowering every pipeline, verifying and printing its plan).
//
// The contract under test (docs/design.md): bad input never crashes, never hangs and never grows memory
// without bound; it gets diagnostics. Any crash, sanitizer report, leak or timeout is a bug.
//
// Build and run with tests/fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/front/diagnostics.h"
#include "compiler/front/parser.h"
#include "compiler/front/source.h"
#include "compiler/lower/lower.h"
#include "compiler/sema/program.h"
#include "runtime/plan/plan.h"

namespace {

// Renders every diagnostic: the caret snippets index into the source text with the reported ranges.
void render_all(const pipec::Diagnostics& diags) {
  for (const pipec::Diagnostic& d : diags.all()) {
    std::string s = diags.render(d);
    if (s.empty()) __builtin_trap();  // a diagnostic always says something
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  // Parse only.
  {
    pipec::SourceManager sources;
    pipec::Diagnostics diags(sources);
    uint32_t id = sources.add("fuzz.pipe", text);
    auto module = pipec::parse_module(sources, id, diags);
    if (!module) __builtin_trap();  // parse_module always returns a module
    render_all(diags);
  }

  // The parser's greedy first stage (compiler/front/greedy_prediction.h) against ANTLR's prediction:
  // the same tree and the same syntax errors.
  if (pipec::parse_tree_text(text, true).tree != pipec::parse_tree_text(text, false).tree) __builtin_trap();

  // The whole check, as `pipec check` and the language server run it. Imports resolve against the
  // working directory and the stdlib folder.
  pipec::CheckOptions options;
  auto program = pipec::check_text("fuzz.pipe", text, options);
  render_all(program->diags);

  // A clean spec must lower to plans that verify, as `pipec explain` expects.
  if (!program->diags.has_errors()) {
    for (const auto& d : program->main().decls) {
      if (d->kind != pipec::DeclKind::Pipeline) continue;
      pipec::Plan plan = pipec::lower_pipeline(*program, *d);
      if (!pipec::verify_plan(plan).empty()) __builtin_trap();
      (void)pipec::print_plan(plan);
    }
  }
  return 0;
}

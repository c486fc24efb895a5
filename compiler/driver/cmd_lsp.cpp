// `pipec lsp`: the language server, speaking LSP over stdin/stdout (see docs/editors.md).
#include <cstdio>
#include <iostream>

#include "compiler/driver/commands.h"
#include "compiler/front/big_stack.h"
#include "compiler/lsp/server.h"

namespace pipec {

int cmd_lsp(const Args& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::cout << "usage: pipec lsp [--stdio]\n\n"
                   "Runs the pipec language server on standard input and output (LSP, JSON-RPC 2.0 with\n"
                   "Content-Length framing). Editors start it themselves; see docs/editors.md.\n";
      return 0;
    }
    if (a != "--stdio") {
      std::cerr << "pipec lsp: unknown argument `" << a << "` (try --help)\n";
      return 2;
    }
  }
  std::ios::sync_with_stdio(false);
  // Checking a spec recurses on deeply nested expressions; a private thread with a large stack keeps a
  // pathological buffer from overflowing the main thread's stack.
  int code = 1;
  run_with_big_stack(size_t(512) << 20, [&] { code = lsp::run_lsp_server(std::cin, std::cout); });
  std::cout.flush();
  return code;
}

}  // namespace pipec

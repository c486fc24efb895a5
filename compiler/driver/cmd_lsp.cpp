// `pipec lsp`: the language server, speaking LSP over stdin/stdout (see docs/editors.md).
#include <cstdio>
#include <iostream>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/front/big_stack.h"
#include "compiler/lsp/server.h"

namespace pipec {

int cmd_lsp(const Args& args) {
  bool stdio = true;
  auto app = make_command("lsp", "",
                          "Runs the pipec language server on standard input and output (LSP, JSON-RPC 2.0 with\n"
                          "Content-Length framing). Editors start it themselves; see docs/editors.md.");
  app->add_flag("--stdio", stdio, "speak on stdin/stdout (the only transport, and the default)");
  if (auto code = parse_command_line(*app, args)) return *code;
  std::ios::sync_with_stdio(false);
  // Checking a spec recurses on deeply nested expressions; a private thread with a large stack keeps a
  // pathological buffer from overflowing the main thread's stack.
  int code = 1;
  run_with_big_stack(size_t(512) << 20, [&] { code = lsp::run_lsp_server(std::cin, std::cout); });
  std::cout.flush();
  return code;
}

}  // namespace pipec

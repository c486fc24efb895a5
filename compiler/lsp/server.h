// The pipec language server: LSP 3.17 over a byte stream (stdin/stdout for `pipec lsp`).
//
// Single-threaded and synchronous: each message is handled completely before the next is read, and
// every open document is compiled on open and on change as `pipec check` compiles a spec
// (compile_document.h: the checker, then each train block's step graph), which then publishes its
// diagnostics. Features: hover, completion, signature help, definition, references, document symbols,
// formatting and semantic tokens (see compiler/lsp/analysis.h). Messages are nlohmann-json values (json.h). Malformed
// input never crashes the server: bad framing and invalid JSON get a ParseError response, unknown
// requests MethodNotFound, requests before `initialize` ServerNotInitialized.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "compiler/lsp/compile_document.h"
#include "compiler/lsp/json.h"
#include "compiler/lsp/positions.h"
#include "compiler/sema/program.h"

namespace pipec::lsp {

/// JSON-RPC and LSP error codes.
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kRequestFailed = -32803,
};

class Server {
 public:
  explicit Server(std::ostream& out);
  ~Server();

  /// Handles one message body (a JSON-RPC request, notification or response).
  void handle(std::string_view body);
  /// Answers a header block the transport could not use (bad or oversized Content-Length).
  void handle_bad_header(const std::string& why);

  /// True once `exit` was received; the caller stops reading then.
  bool exited() const { return exited_; }
  /// The process exit code: 0 when `shutdown` came before `exit` (or the end of input), 1 otherwise.
  int exit_code() const { return shutdown_ ? 0 : 1; }

 private:
  struct Document {
    std::string uri;
    std::string path;
    std::string text;
    int64_t version = 0;
    LineIndex index;  // over `text`
    std::unique_ptr<Program> program;
    /// A failure of the compilation beyond the program's diagnostics (an internal error).
    std::optional<CompileFailure> failure;
    /// The last checked version without syntax errors (completion falls back on it while typing).
    std::unique_ptr<Program> last_good;
  };

  void send(const Json& message);
  void respond(const Json& id, Json result);
  void respond_error(const Json& id, int code, const std::string& message);
  void notify(const std::string& method, Json params);

  void on_request(const std::string& method, const Json& id, JsonView params);
  void on_notification(const std::string& method, JsonView params);

  Json initialize_result() const;
  void open(const std::string& uri, std::string text, int64_t version);
  void change(JsonView params);
  void close(const std::string& uri);
  void recheck(Document& doc);
  void publish_diagnostics(const Document& doc);

  Document* document(JsonView params);
  uint32_t offset_of(const Document& doc, JsonView position) const;
  Json location(const Document& doc, const SourceRange& range) const;
  Json range_json(const Document& doc, const SourceRange& range) const;

  Json hover(JsonView params);
  Json completion(JsonView params);
  Json signature_help(JsonView params);
  Json definition(JsonView params);
  Json references(JsonView params);
  Json document_symbols(JsonView params);
  Json formatting(JsonView params);
  Json semantic_tokens_full(JsonView params);

  std::ostream& out_;
  std::map<std::string, std::unique_ptr<Document>> docs_;
  bool initialized_ = false;
  bool shutdown_ = false;
  bool exited_ = false;
};

/// Reads framed messages from `in` and answers on `out` until `exit` or the end of `in`. Returns the
/// exit code (see Server::exit_code).
int run_lsp_server(std::istream& in, std::ostream& out);

/// Formats a buffer with the project's formatter; nullopt (and `error`) when it cannot, for example
/// because the text does not parse. Implemented in format_bridge.cpp.
std::optional<std::string> format_document_text(const std::string& path, const std::string& text, std::string& error);
/// Whether this build has a formatter to offer (decides the documentFormattingProvider capability).
bool formatting_available();

}  // namespace pipec::lsp

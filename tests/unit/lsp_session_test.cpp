// The language server driven like an editor drives it: in-process through run_lsp_server on string
// streams, and once through the real `pipec lsp` binary over pipes.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "compiler/lsp/analysis.h"
#include "tests/unit/lsp_test_client.h"

namespace pipec::lsp {
namespace {

using namespace test_client;

// Line numbers below are 0-based, as LSP counts them.
const char* kSpec =
    "# Spec used by the LSP tests.\n"                             // 0
    "const BATCH = 512\n"                                         // 1
    "\n"                                                          // 2
    "source points = tfrecord(\"data/points-*.tfrecord\") {\n"    // 3
    "  xyz: f32[3]\n"                                             // 4
    "  label: i64\n"                                              // 5
    "}\n"                                                         // 6
    "\n"                                                          // 7
    "# Scales a point.\n"                                         // 8
    "fn scale(v: f32[3], k: f32) -> f32[3] = v * k\n"             // 9
    "\n"                                                          // 10
    "pipeline train = points\n"                                   // 11
    "  | map(r => { pos: scale(r.xyz, 2.0), label: r.label })\n"  // 12
    "  | batch(BATCH)\n";                                         // 13

TEST(LspSession, InitializeAdvertisesCapabilities) {
  Client c;
  JsonView r = c.request("initialize", Json::object({{"capabilities", Json::object()}}));
  JsonView caps = r["result"]["capabilities"];
  EXPECT_EQ(caps["textDocumentSync"]["change"].as_int(), 1);  // full sync
  EXPECT_TRUE(caps["hoverProvider"].as_bool());
  EXPECT_TRUE(caps["definitionProvider"].as_bool());
  EXPECT_TRUE(caps["referencesProvider"].as_bool());
  EXPECT_TRUE(caps["documentSymbolProvider"].as_bool());
  EXPECT_TRUE(caps["documentFormattingProvider"].as_bool());
  EXPECT_EQ(caps["completionProvider"]["triggerCharacters"], Json::array({".", "|"}));
  EXPECT_TRUE(caps["semanticTokensProvider"]["full"].as_bool());
  EXPECT_GT(caps["semanticTokensProvider"]["legend"]["tokenTypes"].size(), 5u);
  EXPECT_EQ(r["result"]["serverInfo"]["name"].as_string(), "pipec");
}

TEST(LspSession, DiagnosticsOnOpenAndClearedOnChange) {
  Client c;
  c.initialize();
  c.open(replace(kSpec, "batch(BATCH)", "batch(0)"));
  JsonView diags = c.diagnostics();
  JsonView error;
  for (JsonView d : diags.elements())
    if (d["severity"].as_int() == 1) error = d;
  ASSERT_TRUE(error.is_object()) << diags;
  EXPECT_EQ(error["code"].as_string(), "invalid_argument_value");
  EXPECT_EQ(error["source"].as_string(), "pipec");
  EXPECT_EQ(error["range"], range(13, 10, 13, 11)) << error;  // the `0`, as `pipec check` shows it
  EXPECT_NE(error["message"].as_string().find("batch"), std::string::npos);

  c.change(kSpec, 2);
  EXPECT_EQ(c.diagnostics(), Json::array());

  // An unknown stage: the range is exactly the name.
  c.change(replace(kSpec, "batch(BATCH)", "bacth(BATCH)"), 3);
  diags = c.diagnostics();
  ASSERT_EQ(diags.size(), 1u) << diags;
  EXPECT_EQ(diags[size_t(0)]["code"].as_string(), "unknown_stage");
  EXPECT_EQ(diags[size_t(0)]["range"], range(13, 4, 13, 9));

  c.notify("textDocument/didClose", Json::object({{"textDocument", text_document()}}));
  EXPECT_EQ(c.diagnostics(), Json::array());
}

// Before the parser kept its lexer alive, ANTLR's recovery crashed when it inserted a missing token
// (`const = 3`, `f(x: f32 -> f32`). The probe runs `pipec check` on such a file in a child process so that
// a crash there skips the tests below instead of taking the whole test binary down.
bool front_end_survives_missing_tokens() {
  static int verdict = -1;
  if (verdict < 0) {
    char path[] = "/tmp/pipec_lsp_probe_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return false;
    std::string text = "fn f(x: f32 -> f32 = x\nconst = 3\npipeline p = (((\n";
    if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) verdict = 0;
    close(fd);
    pid_t pid = fork();
    if (pid == 0) {
      int null_fd = open("/dev/null", O_WRONLY);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      execl(PIPEC_BINARY, PIPEC_BINARY, "check", path, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    unlink(path);
    if (verdict < 0) verdict = WIFEXITED(status) && WEXITSTATUS(status) == 1 ? 1 : 0;
  }
  return verdict == 1;
}

#define SKIP_UNLESS_PARSER_RECOVERS()                                                                       \
  if (!front_end_survives_missing_tokens())                                                                 \
  GTEST_SKIP() << "`pipec check` crashes on a missing token (compiler/front/parser.cpp destroys the lexer " \
                  "before parsing; ANTLR's getMissingSymbol uses it), so this test would crash too"

TEST(LspSession, SyntaxErrorsStillGetDiagnostics) {
  Client c;
  c.initialize();
  c.open("const x 3\npipeline p = \n");
  JsonView diags = c.diagnostics();
  JsonView syntax;
  for (JsonView d : diags.elements())
    if (d["code"].as_string() == "syntax_error" && syntax.is_null()) syntax = d;
  ASSERT_TRUE(syntax.is_object()) << diags;
  EXPECT_EQ(syntax["range"], range(0, 8, 0, 9)) << diags;
  EXPECT_EQ(syntax["severity"].as_int(), 1);
  // Every feature copes with a broken file.
  c.request("textDocument/hover", at(1, 3));
  c.request("textDocument/completion", at(1, 13));
  c.request("textDocument/definition", at(0, 6));
  c.request("textDocument/references", at(0, 6));
  c.request("textDocument/documentSymbol", Json::object({{"textDocument", text_document()}}));
  c.request("textDocument/semanticTokens/full", Json::object({{"textDocument", text_document()}}));
  JsonView fmt = c.request("textDocument/formatting", Json::object({{"textDocument", text_document()}}));
  EXPECT_EQ(fmt["result"], Json::array()) << fmt;  // refused: nothing changes
}

TEST(LspSession, MissingTokensGetDiagnostics) {
  SKIP_UNLESS_PARSER_RECOVERS();
  Client c;
  c.initialize();
  for (const char* text :
       {"const = 3\n", "fn f(x: f32 -> f32 = x\n", "pipeline p = (((\n", "pipeline p = a | map(r => { x: r.y \n"}) {
    c.open(text);
    JsonView diags = c.diagnostics();
    EXPECT_GE(diags.size(), 1u) << text;
    c.request("textDocument/completion", at(0, 10));
    c.request("textDocument/hover", at(0, 10));
  }
}

TEST(LspSession, HoverShowsTypesSignaturesAndDocs) {
  Client c;
  c.initialize();
  c.open(kSpec);
  // A field: `r.xyz`
  JsonView h = c.request("textDocument/hover", at(12, 29));
  std::string v = h["result"]["contents"]["value"].as_string();
  EXPECT_NE(v.find("xyz: f32[3]"), std::string::npos) << v;
  EXPECT_EQ(h["result"]["range"], range(12, 28, 12, 31));
  // A lambda parameter: its record type.
  v = c.request("textDocument/hover", at(12, 8))["result"]["contents"]["value"].as_string();
  EXPECT_NE(v.find("r: {xyz: f32[3], label: i64}"), std::string::npos) << v;
  // A builtin stage: signature, doc and the element after it.
  v = c.request("textDocument/hover", at(13, 6))["result"]["contents"]["value"].as_string();
  EXPECT_NE(v.find("batch(input, size, drop_remainder = false)"), std::string::npos) << v;
  EXPECT_NE(v.find("batched(1)"), std::string::npos) << v;
  // A user fn: signature and doc comment.
  v = c.request("textDocument/hover", at(12, 22))["result"]["contents"]["value"].as_string();
  EXPECT_NE(v.find("fn scale(v: f32[3], k: f32) -> f32[3]"), std::string::npos) << v;
  EXPECT_NE(v.find("Scales a point."), std::string::npos) << v;
  // A pipeline name: its element type.
  v = c.request("textDocument/hover", at(11, 11))["result"]["contents"]["value"].as_string();
  EXPECT_NE(v.find("pipeline train"), std::string::npos) << v;
  EXPECT_NE(v.find("{pos: f32[?, 3], label: i64[?]} batched(1)"), std::string::npos) << v;
  // A const use: its type and value.
  v = c.request("textDocument/hover", at(13, 12))["result"]["contents"]["value"].as_string();
  EXPECT_NE(v.find("const BATCH"), std::string::npos) << v;
  EXPECT_NE(v.find("512"), std::string::npos) << v;
  // An expression: its dtype and shape.
  v = c.request("textDocument/hover", at(9, 42))["result"]["contents"]["value"].as_string();
  EXPECT_NE(v.find("f32[3]"), std::string::npos) << v;
  // Nothing under the cursor.
  EXPECT_TRUE(c.request("textDocument/hover", at(2, 0))["result"].is_null());
  // Unknown document.
  EXPECT_TRUE(c.request("textDocument/hover", at(0, 0, "file:///nope.pipe"))["result"].is_null());
}

TEST(LspSession, CompletionOfFieldsStagesAndNames) {
  Client c;
  c.initialize();
  c.open(kSpec);
  // Typing `r.` in a filter: the fields of r's record type, found by checking.
  std::string typing = replace(kSpec, "  | batch(BATCH)\n", "  | filter(r => r.)\n  | batch(BATCH)\n");
  c.change(typing, 2);
  JsonView comp = c.request("textDocument/completion", at(13, 18));
  std::vector<std::string> l = labels(comp);
  EXPECT_EQ(l, (std::vector<std::string>{"pos", "label"})) << comp;
  EXPECT_EQ(comp["result"]["items"][size_t(0)]["detail"].as_string(), "f32[3]");
  // `r.xy|` in the map: the source's fields.
  std::string partial = replace(kSpec, "scale(r.xyz, 2.0)", "scale(r.xy, 2.0)");
  c.change(partial, 3);
  l = labels(c.request("textDocument/completion", at(12, 30)));
  EXPECT_TRUE(has(l, "xyz") && has(l, "label")) << ::testing::PrintToString(l);
  // `r.` where the rest of the file does not parse: the last good version's lambda is used.
  c.change(kSpec, 4);
  c.change(std::string(kSpec) + "  | filter(r => r.\n", 5);
  l = labels(c.request("textDocument/completion", at(14, 18)));
  EXPECT_TRUE(has(l, "pos") || has(l, "xyz")) << ::testing::PrintToString(l);

  // After `|`: stages and sinks, not ops.
  c.change(std::string(kSpec) + "  | ", 6);
  l = labels(c.request("textDocument/completion", at(14, 4)));
  EXPECT_TRUE(has(l, "shuffle") && has(l, "batch") && has(l, "prefetch") && has(l, "write"))
      << ::testing::PrintToString(l);
  EXPECT_FALSE(has(l, "unpack_bits"));
  // In a fn body: its parameters, ops and consts; not the fn itself (recursion), datasets or stages.
  c.change(kSpec, 7);
  l = labels(c.request("textDocument/completion", at(9, 40)));
  for (const char* want : {"tanh", "reshape", "BATCH", "v", "k"})
    EXPECT_TRUE(has(l, want)) << want << " in " << ::testing::PrintToString(l);
  for (const char* no : {"scale", "points", "train", "batch"})
    EXPECT_FALSE(has(l, no)) << no << " in " << ::testing::PrintToString(l);
}

TEST(LspSession, DefinitionAndReferences) {
  Client c;
  c.initialize();
  c.open(kSpec);
  // BATCH in batch(BATCH) -> the const.
  JsonView d = c.request("textDocument/definition", at(13, 11));
  ASSERT_EQ(d["result"].size(), 1u) << d;
  EXPECT_EQ(d["result"][size_t(0)]["uri"].as_string(), kUri);
  EXPECT_EQ(d["result"][size_t(0)]["range"], range(1, 6, 1, 11));
  // The cursor just after the name works too.
  EXPECT_EQ(c.request("textDocument/definition", at(13, 15))["result"][size_t(0)]["range"], range(1, 6, 1, 11));
  // A field -> the schema field.
  d = c.request("textDocument/definition", at(12, 29));
  EXPECT_EQ(d["result"][size_t(0)]["range"], range(4, 2, 4, 5)) << d;
  // A lambda parameter use -> the parameter.
  EXPECT_EQ(c.request("textDocument/definition", at(12, 26))["result"][size_t(0)]["range"], range(12, 8, 12, 9));
  // A fn, a source, a fn parameter.
  EXPECT_EQ(c.request("textDocument/definition", at(12, 21))["result"][size_t(0)]["range"], range(9, 3, 9, 8));
  EXPECT_EQ(c.request("textDocument/definition", at(11, 19))["result"][size_t(0)]["range"], range(3, 7, 3, 13));
  EXPECT_EQ(c.request("textDocument/definition", at(9, 40))["result"][size_t(0)]["range"], range(9, 9, 9, 10));
  // A builtin has no definition.
  EXPECT_TRUE(c.request("textDocument/definition", at(13, 5))["result"].is_null());

  // References of the const, with and without its declaration.
  JsonView refs =
      c.request("textDocument/references", Json::object({{"textDocument", text_document()},
                                                         {"position", position(1, 7)},
                                                         {"context", Json::object({{"includeDeclaration", true}})}}));
  ASSERT_EQ(refs["result"].size(), 2u) << refs;
  EXPECT_EQ(refs["result"][size_t(0)]["range"], range(1, 6, 1, 11));
  EXPECT_EQ(refs["result"][size_t(1)]["range"], range(13, 10, 13, 15));
  refs =
      c.request("textDocument/references", Json::object({{"textDocument", text_document()},
                                                         {"position", position(13, 11)},
                                                         {"context", Json::object({{"includeDeclaration", false}})}}));
  EXPECT_EQ(refs["result"].size(), 1u);
  // References of a schema field: its uses through `r.`.
  refs =
      c.request("textDocument/references", Json::object({{"textDocument", text_document()},
                                                         {"position", position(5, 3)},
                                                         {"context", Json::object({{"includeDeclaration", true}})}}));
  ASSERT_EQ(refs["result"].size(), 2u) << refs;
  EXPECT_EQ(refs["result"][size_t(1)]["range"], range(12, 48, 12, 53));
}

/// The semantic token type at each (line, character) of the open document.
std::map<std::pair<uint32_t, uint32_t>, std::string> token_types(Client& c) {
  JsonView data = c.request("textDocument/semanticTokens/full",
                            Json::object({{"textDocument", text_document()}}))["result"]["data"];
  EXPECT_EQ(data.size() % 5, 0u);
  std::map<std::pair<uint32_t, uint32_t>, std::string> out;
  uint32_t line = 0, col = 0;
  for (size_t i = 0; i + 4 < data.size(); i += 5) {
    uint32_t dl = static_cast<uint32_t>(data[i].as_int());
    line += dl;
    col = dl ? static_cast<uint32_t>(data[i + 1].as_int()) : col + static_cast<uint32_t>(data[i + 1].as_int());
    out[{line, col}] = semantic_token_types().at(static_cast<size_t>(data[i + 3].as_int()));
  }
  return out;
}

// A name is coloured by what the checker resolved it to: a const or a local named like a builtin
// (`size`, `mean`) is a variable, not a builtin function.
TEST(LspSession, SemanticTokensFollowTheChecker) {
  Client c;
  c.initialize();
  c.open(
      "const size = 3\n"                       // 0
      "pipeline p = range(10) | map(r => {\n"  // 1
      "    mean = f32(r.value)\n"              // 2
      "    { x: mean * f32(size) }\n"          // 3: mean at 9, f32 at 16, size at 20
      "  })\n");
  EXPECT_EQ(c.diagnostics(), Json::array());
  auto types = token_types(c);
  EXPECT_EQ((types[{3, 9}]), "variable");
  EXPECT_EQ((types[{3, 16}]), "function");
  EXPECT_EQ((types[{3, 20}]), "variable");
  EXPECT_EQ((types[{1, 13}]), "function");  // range
}

TEST(LspSession, DocumentSymbolsAndSemanticTokens) {
  Client c;
  c.initialize();
  c.open(kSpec);
  JsonView syms = c.request("textDocument/documentSymbol", Json::object({{"textDocument", text_document()}}))["result"];
  ASSERT_EQ(syms.size(), 4u) << syms;
  EXPECT_EQ(syms[size_t(0)]["name"].as_string(), "BATCH");
  EXPECT_EQ(syms[size_t(0)]["kind"].as_int(), 14);  // Constant
  EXPECT_EQ(syms[size_t(1)]["name"].as_string(), "points");
  EXPECT_EQ(syms[size_t(1)]["children"].size(), 2u);
  EXPECT_EQ(syms[size_t(2)]["kind"].as_int(), 12);  // Function
  EXPECT_EQ(syms[size_t(3)]["name"].as_string(), "train");
  EXPECT_EQ(syms[size_t(3)]["selectionRange"], range(11, 9, 11, 14));

  std::map<std::pair<uint32_t, uint32_t>, std::string> types = token_types(c);
  ASSERT_GT(types.size(), 10u);
  auto type_at = [&](uint32_t l, uint32_t c0) { return types[{l, c0}]; };
  EXPECT_EQ(type_at(0, 0), "comment");
  EXPECT_EQ(type_at(1, 0), "keyword");    // const
  EXPECT_EQ(type_at(1, 14), "number");    // 512
  EXPECT_EQ(type_at(3, 16), "function");  // tfrecord
  EXPECT_EQ(type_at(3, 25), "string");
  EXPECT_EQ(type_at(4, 7), "type");        // f32
  EXPECT_EQ(type_at(11, 0), "keyword");    // pipeline
  EXPECT_EQ(type_at(11, 9), "variable");   // train: a name here, not the keyword
  EXPECT_EQ(type_at(12, 2), "operator");   // |
  EXPECT_EQ(type_at(12, 8), "parameter");  // r
  EXPECT_EQ(type_at(12, 28), "property");  // xyz
}

TEST(LspSession, NonAsciiTextUsesUtf16Positions) {
  Client c;
  c.initialize();
  // "é" is 2 bytes and 1 UTF-16 unit, "😀" 4 bytes and 2 units: on line 1, `yy` starts at byte 17 but at
  // UTF-16 character 16.
  c.open("# caf\xC3\xA9 \xF0\x9F\x98\x80\nconst x = \"\xC3\xA9\" + yy\n");
  JsonView diags = c.diagnostics();
  JsonView unknown;
  for (JsonView d : diags.elements())
    if (d["code"].as_string() == "unknown_name") unknown = d;
  ASSERT_TRUE(unknown.is_object()) << diags;
  EXPECT_EQ(unknown["range"], range(1, 16, 1, 18)) << diags;
  JsonView tokens = c.request("textDocument/semanticTokens/full", Json::object({{"textDocument", text_document()}}));
  JsonView data = tokens["result"]["data"];
  ASSERT_GE(data.size(), 10u);
  EXPECT_EQ(data[size_t(2)].as_int(), 9);  // the comment: "# café 😀" is 9 UTF-16 units
  EXPECT_EQ(data[size_t(5)].as_int(), 1);  // `const` on the next line
  EXPECT_EQ(data[size_t(6)].as_int(), 0);
  // A message with invalid UTF-8 is not JSON (RFC 8259 requires UTF-8): a ParseError, and the document
  // keeps its text.
  c.raw(std::string(
            "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{\"uri\":\"") +
        kUri + "\",\"version\":2},\"contentChanges\":[{\"text\":\"# \xFF\xFE\\nconst x = 1\\n\"}]}}");
  std::vector<JsonView> replies = c.take();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["error"]["code"].as_int(), kParseError) << replies[0];
  EXPECT_NE(replies[0]["error"]["message"].as_string().find("UTF-8"), std::string::npos) << replies[0];
  EXPECT_TRUE(replies[0]["id"].is_null());
  tokens = c.request("textDocument/semanticTokens/full", Json::object({{"textDocument", text_document()}}));
  EXPECT_EQ(tokens["result"]["data"][size_t(2)].as_int(), 9) << tokens;  // still the first text
}

// Text travels through the protocol unchanged both ways: quotes, backslashes, control characters and
// non-ASCII in a doc comment come back in the hover and in the formatted text.
TEST(LspSession, TextRoundTripsThroughTheProtocol) {
  const std::string comment = "# Says \"hi\" \\ back\\slash,\ttab \x01 caf\xC3\xA9 \xF0\x9F\x98\x80 \xE2\x82\xAC";
  const std::string text = comment + "\nfn f(x: f32) -> f32 = x\n\nfn g(x: f32) -> f32 =   f(x)\n";
  Client c;
  c.initialize();
  c.open(text);
  JsonView h = c.request("textDocument/hover", at(3, 24));
  EXPECT_NE(h["result"]["contents"]["value"].as_string().find(comment.substr(2)), std::string::npos) << h;
  JsonView f = c.request("textDocument/formatting", Json::object({{"textDocument", text_document()}}));
  ASSERT_EQ(f["result"].size(), 1u) << f;  // the extra spaces go
  std::string formatted = f["result"][size_t(0)]["newText"].as_string();
  EXPECT_EQ(formatted.substr(0, comment.size() + 1), comment + "\n") << f;
  EXPECT_NE(formatted.find("= f(x)"), std::string::npos) << f;
}

// Files read from disk (an import) may hold invalid UTF-8; what the server writes stays valid JSON, with
// U+FFFD in place of the bad bytes.
TEST(LspSession, InvalidUtf8FromDiskBecomesReplacementCharacters) {
  char dir[] = "/tmp/pipec_lsp_utf8_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string lib = std::string(dir) + "/lib.pipe";
  {
    std::ofstream out(lib, std::ios::binary);
    out << "# bad \xFF\xFE bytes\nfn g(x: f32) -> f32 = x\n";
  }
  std::string uri = "file://" + std::string(dir) + "/main.pipe";
  Client c;
  c.initialize();
  c.open("import \"lib.pipe\"\n\nfn _h(x: f32) -> f32 = g(x)\n", uri);
  EXPECT_EQ(c.diagnostics(uri), Json::array());
  JsonView hover = c.request("textDocument/hover", at(2, 23, uri));  // parse_stream checks it is valid JSON
  EXPECT_NE(hover["result"]["contents"]["value"].as_string().find("bad \xEF\xBF\xBD\xEF\xBF\xBD bytes"),
            std::string::npos)
      << hover;
  unlink(lib.c_str());
  rmdir(dir);
}

TEST(LspSession, FormattingReturnsAnEdit) {
  Client c;
  c.initialize();
  c.open("const   BATCH=512\n");
  JsonView f = c.request("textDocument/formatting",
                         Json::object({{"textDocument", text_document()},
                                       {"options", Json::object({{"tabSize", 2}, {"insertSpaces", true}})}}));
  ASSERT_EQ(f["result"].size(), 1u) << f;
  EXPECT_EQ(f["result"][size_t(0)]["newText"].as_string(), "const BATCH = 512\n");
  EXPECT_EQ(f["result"][size_t(0)]["range"], range(0, 0, 1, 0));
  c.change("const BATCH = 512\n", 2);
  f = c.request("textDocument/formatting", Json::object({{"textDocument", text_document()}}));
  EXPECT_EQ(f["result"], Json::array());  // already formatted
}

TEST(LspSession, ProtocolErrorsAndLifecycle) {
  Client c;
  // Before initialize: requests are refused, notifications dropped.
  JsonView r = c.request("textDocument/hover", at(0, 0));
  EXPECT_EQ(r["error"]["code"].as_int(), kServerNotInitialized);
  c.open(kSpec);
  EXPECT_TRUE(c.take().empty());
  c.initialize();
  // Unknown request: MethodNotFound; unknown notification: ignored.
  r = c.request("textDocument/colorPresentation", Json::object({{"textDocument", text_document()}}));
  EXPECT_EQ(r["error"]["code"].as_int(), kMethodNotFound);
  c.notify("$/somethingNew", Json::object());
  EXPECT_TRUE(c.take().empty());
  // Invalid JSON and invalid messages.
  c.raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
  auto msgs = c.take();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]["error"]["code"].as_int(), kParseError);
  EXPECT_TRUE(msgs[0]["id"].is_null());
  c.raw("[1, 2]");
  EXPECT_EQ(c.take()[0]["error"]["code"].as_int(), kInvalidRequest);
  // Well-formed but nested 100,000 deep: refused before anything copies it recursively.
  c.raw("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"textDocument/hover\",\"params\":" + std::string(100000, '[') +
        std::string(100000, ']') + "}");
  msgs = c.take();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]["error"]["code"].as_int(), kParseError);
  EXPECT_NE(msgs[0]["error"]["message"].as_string().find("nested deeper"), std::string::npos) << msgs[0];
  c.raw("{\"jsonrpc\":\"2.0\",\"id\":7}");
  msgs = c.take();
  EXPECT_EQ(msgs[0]["error"]["code"].as_int(), kInvalidRequest);
  EXPECT_EQ(msgs[0]["id"].as_int(), 7);
  c.raw("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"shutdown\"}");
  EXPECT_EQ(c.take()[0]["error"]["code"].as_int(), kInvalidRequest);
  c.raw("{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"textDocument/hover\",\"params\":3}");
  msgs = c.take();
  EXPECT_EQ(msgs[0]["error"]["code"].as_int(), kInvalidParams);
  EXPECT_EQ(msgs[0]["id"].as_string(), "s1");
  c.raw("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":null}");  // a response from the client: ignored
  EXPECT_TRUE(c.take().empty());
  // Garbage positions are clamped, never out of range.
  r = c.request("textDocument/hover", Json::object({{"textDocument", text_document()},
                                                    {"position", Json::object({{"line", -5}, {"character", 1e300}})}}));
  EXPECT_TRUE(r.has("result"));
  // Still working.
  c.open(kSpec);
  EXPECT_FALSE(c.request("textDocument/hover", at(12, 29))["result"].is_null());
  // Shutdown, then requests are refused and exit ends with 0.
  EXPECT_TRUE(c.request("shutdown").has("result"));
  EXPECT_EQ(c.request("textDocument/hover", at(12, 29))["error"]["code"].as_int(), kInvalidRequest);
  EXPECT_FALSE(c.server().exited());
  c.notify("exit");
  EXPECT_TRUE(c.server().exited());
  EXPECT_EQ(c.server().exit_code(), 0);
}

std::string frame(const Json& j) { return frame_message(dump_json(j)); }
Json req(int id, const std::string& method, Json params = Json::object()) {
  return Json::object({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
}
Json note(const std::string& method, Json params = Json::object()) {
  return Json::object({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

TEST(LspSession, ExitCodes) {
  {
    std::istringstream in(frame(req(1, "initialize")) + frame(req(2, "shutdown")) + frame(note("exit")) +
                          frame(req(3, "initialize")));
    std::ostringstream out;
    EXPECT_EQ(run_lsp_server(in, out), 0);
    EXPECT_EQ(parse_stream(out.str()).size(), 2u);  // nothing is read after exit
  }
  {
    std::istringstream in(frame(req(1, "initialize")) + frame(note("exit")));
    std::ostringstream out;
    EXPECT_EQ(run_lsp_server(in, out), 1);  // exit without shutdown
  }
  {
    std::istringstream in(frame(req(1, "initialize")));
    std::ostringstream out;
    EXPECT_EQ(run_lsp_server(in, out), 1);  // the editor went away
  }
}

TEST(LspSession, MalformedStreamKeepsServing) {
  std::string stream;
  stream += std::string("\x00\x01\x02 garbage bytes \xFF\xFE\r\n\r\n", 24);
  stream += frame(req(1, "textDocument/hover", at(0, 0)));  // before initialize
  stream += frame(req(2, "initialize"));
  stream += "Content-Length: twelve\r\n\r\n{\"id\":99}";  // bad length, then its unframed body
  stream += frame(req(3, "textDocument/definition", at(0, 0)));
  stream += "Content-Length: 99999999999999\r\n\r\n";  // far over the limit
  stream += frame(req(4, "no/such/method"));
  stream += frame_message("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\"");  // invalid JSON
  stream += frame_message(std::string(5000, '['));                            // deep nesting
  stream += frame_message("\xFF\xFE\xFD");
  stream += frame(req(6, "shutdown"));
  stream += frame(note("exit"));
  std::istringstream in(stream);
  std::ostringstream out;
  EXPECT_EQ(run_lsp_server(in, out), 0);
  std::vector<Json> msgs = parse_stream(out.str());
  std::map<int64_t, JsonView> by_id;
  int null_id_errors = 0;
  for (JsonView m : msgs) {
    if (m["id"].is_null()) {
      EXPECT_EQ(m["error"]["code"].as_int(), kParseError) << m;
      ++null_id_errors;
    } else {
      by_id[m["id"].as_int()] = m;
    }
  }
  EXPECT_EQ(by_id[1]["error"]["code"].as_int(), kServerNotInitialized);
  EXPECT_TRUE(by_id[2]["result"]["capabilities"].is_object());
  EXPECT_TRUE(by_id[3].has("result"));  // a document that is not open: null
  EXPECT_EQ(by_id[4]["error"]["code"].as_int(), kMethodNotFound);
  EXPECT_TRUE(by_id[6].has("result"));
  EXPECT_EQ(null_id_errors, 5);  // bad length, huge length, invalid JSON, deep nesting, bad bytes
}

TEST(LspSession, RandomMessagesNeverCrash) {
  SKIP_UNLESS_PARSER_RECOVERS();
  std::mt19937 rng(99);
  Client c;
  c.initialize();
  c.open(kSpec);
  const std::vector<std::string> methods = {
      "textDocument/hover",      "textDocument/completion",     "textDocument/definition",
      "textDocument/references", "textDocument/documentSymbol", "textDocument/semanticTokens/full",
      "textDocument/didChange",  "textDocument/didOpen",        "textDocument/formatting"};
  std::string text = kSpec;
  for (int i = 0; i < 300; ++i) {
    const std::string& m = methods[rng() % methods.size()];
    Json params = at(static_cast<int>(rng() % 16) - 1, static_cast<int>(rng() % 70));
    if (m == "textDocument/didChange" || m == "textDocument/didOpen") {
      // Mutate the text: drop or duplicate a random slice.
      size_t a = rng() % (text.size() + 1), b = rng() % (text.size() + 1);
      if (a > b) std::swap(a, b);
      text = (rng() % 2) ? text.substr(0, a) + text.substr(b) : text.substr(0, b) + text.substr(a);
      if (text.size() > 4000) text = kSpec;
      if (m == "textDocument/didOpen")
        params = Json::object({{"textDocument", Json::object({{"uri", kUri}, {"version", i}, {"text", text}})}});
      else
        params = Json::object({{"textDocument", Json::object({{"uri", kUri}, {"version", i}})},
                               {"contentChanges", Json::array({Json::object({{"text", text}})})}});
      c.notify(m, params);
    } else {
      JsonView r = c.request(m, params);
      EXPECT_TRUE(r.has("result") || r.has("error")) << r;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// The real binary over pipes.

class Process {
 public:
  explicit Process(const std::vector<std::string>& argv) {
    int in_pipe[2], out_pipe[2];
    if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in_pipe[0], 0);
      dup2(out_pipe[1], 1);
      close(in_pipe[1]);
      close(out_pipe[0]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    to_child_ = in_pipe[1];
    from_child_ = out_pipe[0];
    signal(SIGPIPE, SIG_IGN);
  }
  ~Process() {
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ >= 0) close(from_child_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool started() const { return pid_ > 0; }

  void send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = write(to_child_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  /// The next message, or null after `timeout_ms` without one (kept for the process's lifetime).
  JsonView receive(int timeout_ms = 30000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      size_t header_end = buffer_.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        size_t at = buffer_.find("Content-Length: ");
        size_t length = std::stoul(buffer_.substr(at + 16, header_end - at - 16));
        if (buffer_.size() >= header_end + 4 + length) {
          std::string body = buffer_.substr(header_end + 4, length);
          buffer_.erase(0, header_end + 4 + length);
          JsonParseResult r = parse_json(body);
          EXPECT_TRUE(r.ok()) << body;
          return kept_.emplace_back(r.value.value_or(Json()));
        }
      }
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) return JsonView();
      pollfd p{from_child_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) return JsonView();
      char chunk[65536];
      ssize_t n = read(from_child_, chunk, sizeof chunk);
      if (n <= 0) return JsonView();
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  /// Messages until one satisfies `pred` (that one is returned), or null.
  template <class Pred>
  JsonView receive_until(Pred pred) {
    for (int i = 0; i < 100; ++i) {
      JsonView m = receive();
      if (m.is_null()) return m;
      if (pred(m)) return m;
    }
    return JsonView();
  }
  JsonView response(int id) {
    return receive_until([&](JsonView m) { return m["id"].as_int(-1) == id && !m.has("method"); });
  }
  JsonView diagnostics() {
    return receive_until([](JsonView m) { return m["method"].as_string() == "textDocument/publishDiagnostics"; });
  }

  /// The exit status, or -1 when the process does not end within `timeout_ms`.
  int wait_exit(int timeout_ms = 10000) {
    close(to_child_);
    to_child_ = -1;
    for (int waited = 0; waited < timeout_ms; waited += 10) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      usleep(10000);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool reaped_ = false;
  std::string buffer_;
  std::deque<Json> kept_;
};

TEST(LspBinary, StdioSessionWithTheRealServer) {
  Process p({PIPEC_BINARY, "lsp"});
  ASSERT_TRUE(p.started());
  p.send(frame(req(1, "initialize", Json::object({{"processId", nullptr}, {"capabilities", Json::object()}}))));
  JsonView init = p.response(1);
  ASSERT_TRUE(init["result"]["capabilities"]["hoverProvider"].as_bool()) << init;
  p.send(frame(note("initialized")));

  // Open a spec with an error: its diagnostic, with the exact range.
  std::string bad = replace(kSpec, "batch(BATCH)", "batch(0)");
  p.send(frame(note(
      "textDocument/didOpen",
      Json::object(
          {{"textDocument", Json::object({{"uri", kUri}, {"languageId", "pipe"}, {"version", 1}, {"text", bad}})}}))));
  JsonView diags = p.diagnostics();
  ASSERT_FALSE(diags.is_null());
  JsonView error;
  for (JsonView d : diags["params"]["diagnostics"].elements())
    if (d["severity"].as_int() == 1) error = d;
  EXPECT_EQ(error["code"].as_string(), "invalid_argument_value") << diags;
  EXPECT_EQ(error["range"], range(13, 10, 13, 11));

  // Fix it: the diagnostics are cleared.
  p.send(frame(note("textDocument/didChange",
                    Json::object({{"textDocument", Json::object({{"uri", kUri}, {"version", 2}})},
                                  {"contentChanges", Json::array({Json::object({{"text", kSpec}})})}}))));
  diags = p.diagnostics();
  EXPECT_EQ(diags["params"]["diagnostics"], Json::array()) << diags;
  EXPECT_EQ(diags["params"]["version"].as_int(), 2);

  // Hover on a field.
  p.send(frame(req(2, "textDocument/hover", at(12, 29))));
  JsonView hover = p.response(2);
  EXPECT_NE(hover["result"]["contents"]["value"].as_string().find("xyz: f32[3]"), std::string::npos) << hover;

  // Completion after `r.`.
  std::string typing = replace(kSpec, "  | batch(BATCH)\n", "  | filter(r => r.)\n  | batch(BATCH)\n");
  p.send(frame(note("textDocument/didChange",
                    Json::object({{"textDocument", Json::object({{"uri", kUri}, {"version", 3}})},
                                  {"contentChanges", Json::array({Json::object({{"text", typing}})})}}))));
  p.send(frame(req(3, "textDocument/completion", at(13, 18))));
  JsonView comp = p.response(3);
  EXPECT_EQ(labels(comp), (std::vector<std::string>{"pos", "label"})) << comp;

  // Definition of a const.
  p.send(frame(note("textDocument/didChange",
                    Json::object({{"textDocument", Json::object({{"uri", kUri}, {"version", 4}})},
                                  {"contentChanges", Json::array({Json::object({{"text", kSpec}})})}}))));
  p.send(frame(req(4, "textDocument/definition", at(13, 11))));
  JsonView def = p.response(4);
  EXPECT_EQ(def["result"][size_t(0)]["range"], range(1, 6, 1, 11)) << def;

  // Formatting returns an edit (the spec's pipeline fits on one line).
  p.send(frame(req(5, "textDocument/formatting",
                   Json::object({{"textDocument", text_document()},
                                 {"options", Json::object({{"tabSize", 2}, {"insertSpaces", true}})}}))));
  JsonView fmt = p.response(5);
  ASSERT_EQ(fmt["result"].size(), 1u) << fmt;
  EXPECT_NE(fmt["result"][size_t(0)]["newText"].as_string().find("const BATCH = 512"), std::string::npos);

  // Garbage in the middle does not kill it.
  p.send("Content-Length: nope\r\n\r\n");
  JsonView err = p.receive();
  EXPECT_EQ(err["error"]["code"].as_int(), kParseError) << err;

  p.send(frame(req(6, "shutdown")));
  EXPECT_TRUE(p.response(6).has("result"));
  p.send(frame(note("exit")));
  EXPECT_EQ(p.wait_exit(), 0);
}

TEST(LspBinary, ExitWithoutShutdownIsOne) {
  Process p({PIPEC_BINARY, "lsp"});
  ASSERT_TRUE(p.started());
  p.send(frame(req(1, "initialize")));
  EXPECT_FALSE(p.response(1).is_null());
  p.send(frame(note("exit")));
  EXPECT_EQ(p.wait_exit(), 1);
}

}  // namespace
}  // namespace pipec::lsp

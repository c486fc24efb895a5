// Signature help: the signature of what the checker resolved the callee to, with the parameter under the
// cursor (after `x | f(`, x is the first parameter); and the text scanning it and completion rely on.
#include <gtest/gtest.h>

#include "compiler/lsp/text_scan.h"
#include "compiler/sema/builtins.h"
#include "tests/unit/lsp_test_client.h"

namespace pipec::lsp {
namespace {

using namespace test_client;

const char* kSpec =
    "source s = range(10)\n"                                                        // 0
    "pipeline p = s | map(r => { v: f32(r.value) | reshape([1]) })\n"               // 1
    "  | batch(2, drop_remainder = true) | write(tfrecord(\"o-*\", shards = 2))\n"  // 2
    "model net(x: f32[8]) -> f32[4] {\n"                                            // 3
    "  x | dense(4) | relu\n"                                                       // 4
    "}\n"                                                                           // 5
    "fn f(a: f32, b: f32) -> f32 = a\n"                                             // 6
    "fn g(a: f32) -> f32 = f(a, a) + (a | f(a))\n";                                 // 7

/// The label of the signature at (line, character) and the text of its active parameter ("" for none).
std::pair<std::string, std::string> signature(Client& c, int line, int character) {
  JsonView r = c.request("textDocument/signatureHelp", at(line, character))["result"];
  if (r.is_null()) return {"<none>", ""};
  JsonView sig = r["signatures"][size_t(0)];
  std::string label = sig["label"].as_string();
  if (!r.has("activeParameter")) return {label, ""};
  JsonView range = sig["parameters"][static_cast<size_t>(r["activeParameter"].as_int())]["label"];
  size_t begin = static_cast<size_t>(range[size_t(0)].as_int()), end = static_cast<size_t>(range[size_t(1)].as_int());
  return {label, end <= label.size() && begin <= end ? label.substr(begin, end - begin) : "<bad range>"};
}

int col(const std::string& line, const std::string& after) { return static_cast<int>(line.find(after) + after.size()); }

TEST(LspSignatureHelp, TheCalleeTheCheckerChoseAndTheActiveParameter) {
  Client c;
  c.initialize();
  c.open(kSpec);
  JsonView caps = c.request("initialize", Json::object())["result"]["capabilities"];
  EXPECT_EQ(caps["signatureHelpProvider"]["triggerCharacters"], Json::array({"(", ","}));
  const std::string l1 = "pipeline p = s | map(r => { v: f32(r.value) | reshape([1]) })";
  const std::string l2 = "  | batch(2, drop_remainder = true) | write(tfrecord(\"o-*\", shards = 2))";
  const std::string batch = find_builtin("batch", {BuiltinKind::Stage})->signature();
  // A stage after `|`: its first argument is the second parameter; a function literal is not named `r`.
  EXPECT_EQ(signature(c, 1, col(l1, "map(")),
            std::make_pair(find_builtin("map", {BuiltinKind::Stage})->signature(), std::string("fn")));
  EXPECT_EQ(signature(c, 2, col(l2, "batch(")), std::make_pair(batch, std::string("size")));
  EXPECT_EQ(signature(c, 2, col(l2, "2, ")), std::make_pair(batch, std::string("drop_remainder = false")));
  EXPECT_EQ(signature(c, 2, col(l2, "drop_re")),
            std::make_pair(batch, std::string("drop_remainder = false")));  // by name
  // Inside write(...): tfrecord is the output format, not the source.
  const std::string format = find_builtin("tfrecord", {BuiltinKind::Format})->signature();
  EXPECT_EQ(signature(c, 2, col(l2, "tfrecord(")), std::make_pair(format, std::string("path")));
  EXPECT_EQ(signature(c, 2, col(l2, "shards = ")), std::make_pair(format, std::string("shards = 1")));
  // An op in a map body, piped: reshape(x, shape) with x from the pipe; a cast.
  EXPECT_EQ(signature(c, 1, col(l1, "reshape(")).second, "shape");
  EXPECT_EQ(signature(c, 1, col(l1, "f32(")), std::make_pair(std::string("f32(x)"), std::string("x")));
  // A layer in a model: dense(x, units), x from the pipe.
  EXPECT_EQ(signature(c, 4, 12),
            std::make_pair(find_builtin("dense", {BuiltinKind::Layer})->signature(), std::string("units")));
  // Your fn, called and piped.
  const std::string fsig = "fn f(a: f32, b: f32) -> f32";
  const std::string l7 = "fn g(a: f32) -> f32 = f(a, a) + (a | f(a))";
  EXPECT_EQ(signature(c, 7, col(l7, "= f(")), std::make_pair(fsig, std::string("a: f32")));
  EXPECT_EQ(signature(c, 7, col(l7, "f(a, ")), std::make_pair(fsig, std::string("b: f32")));
  EXPECT_EQ(signature(c, 7, col(l7, "| f(")), std::make_pair(fsig, std::string("b: f32")));
  // Inside a list argument: still the call's parameter. Outside any call: nothing.
  EXPECT_EQ(signature(c, 1, col(l1, "reshape([")).second, "shape");
  EXPECT_EQ(signature(c, 0, 5).first, "<none>");
  EXPECT_EQ(signature(c, 3, 16).first, "<none>");  // a model's parameter list is not a call
}

TEST(LspSignatureHelp, WhileTheCallIsBeingTyped) {
  Client c;
  c.initialize();
  // Nothing after the `(` yet, and the rest of the file after it.
  c.open("source s = range(10)\npipeline p = s | batch(\n\nfn f(x: f32) -> f32 = x\n");
  EXPECT_EQ(signature(c, 1, 23),
            std::make_pair(find_builtin("batch", {BuiltinKind::Stage})->signature(), std::string("size")));
  c.change("model net(x: f32[8]) -> f32[4] {\n  x | dense(4, \n", 2);
  // dense takes one argument besides its input: no parameter is active after the comma.
  EXPECT_EQ(signature(c, 1, 15),
            std::make_pair(find_builtin("dense", {BuiltinKind::Layer})->signature(), std::string("")));
}

TEST(LspTextScan, ArgumentsAndBrackets) {
  std::string t = "f(a, g(b, c), name = [1, 2], \"x,(\" # ),\n , k == 1, r => r.x)";
  uint32_t open = 1;
  auto arg = [&](const std::string& before) {
    return argument_at(t, open, static_cast<uint32_t>(t.find(before) + before.size()));
  };
  EXPECT_EQ(arg("f(").index, 0u);
  EXPECT_EQ(arg("g(b, ").index, 1u);  // inside the nested call: still f's second argument
  ArgumentAt named = arg("name = [1, ");
  EXPECT_EQ(named.index, 2u);
  EXPECT_EQ(named.name, "name");
  EXPECT_EQ(named.positional_before, 2u);
  ArgumentAt after_string = arg("\n , ");  // the comma inside the string and the comment do not count
  EXPECT_EQ(after_string.index, 4u);
  EXPECT_EQ(after_string.positional_before, 3u);
  EXPECT_EQ(after_string.name, "");     // `k == 1` is not a named argument
  EXPECT_EQ(arg("k == 1, ").name, "");  // nor is the lambda `r => r.x`
  EXPECT_EQ(arg("na").name, "name");    // the cursor in the middle of the name
  EXPECT_EQ(open_brackets(t, 0, static_cast<uint32_t>(t.find("[1,") + 2)), "([");
  EXPECT_EQ(open_brackets(t, 0, static_cast<uint32_t>(t.size())), "");
  EXPECT_EQ(closing_brackets("({["), "]})");
  EXPECT_EQ(word_at("ab cd_9 e", 5).begin, 3u);
  EXPECT_EQ(word_at("ab cd_9 e", 5).end, 7u);
  std::string spec = "const A = 1\n  pipeline x\npipeline p = s\n  | map(\nfn f() -> f32 = 1.0\n";
  DeclLine d = enclosing_decl_line(spec, static_cast<uint32_t>(spec.find("map(")));
  EXPECT_EQ(d.keyword, "pipeline");
  EXPECT_EQ(d.begin, spec.find("pipeline p"));  // an indented `pipeline` is not a declaration line
  EXPECT_EQ(next_decl_line(spec, static_cast<uint32_t>(spec.find("map("))), spec.find("fn f"));
  EXPECT_EQ(next_decl_line(spec, static_cast<uint32_t>(spec.find("fn f"))), spec.size());
}

}  // namespace
}  // namespace pipec::lsp

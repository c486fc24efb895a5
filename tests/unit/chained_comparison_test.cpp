// Comparisons do not chain (docs/language.md §6.1): a comparison whose operand is a comparison written
// without parentheses is `chained_comparison`, once for the whole chain, with its range and both
// readings in the help; a parenthesized comparison of a bool stays legal. The formatter keeps both
// forms as written, and the language server reports the error like `pipec check` and keeps serving.
#include <gtest/gtest.h>

#include <sstream>

#include "compiler/compile/compile.h"
#include "tests/unit/lsp_test_client.h"

namespace pipec {
namespace {

struct Checked {
  std::vector<Diagnostic> diags;
  std::string text;  // the spec
  std::string printed;

  std::vector<const Diagnostic*> of(DiagKind kind) const {
    std::vector<const Diagnostic*> out;
    for (const Diagnostic& d : diags)
      if (d.kind == kind) out.push_back(&d);
    return out;
  }
  std::string spanned(const Diagnostic& d) const { return text.substr(d.range.begin, d.range.end - d.range.begin); }
};

// A spec whose pipeline maps `r` (an element of range(4), field `value`) to `{ out: EXPR }`, with
// `a`, `b`, `c`, `d` and `p`, `q` bound to numbers and bools computed at run time.
Checked check_expr(const std::string& expr) {
  Checked c;
  c.text =
      "pipeline t = range(4) | map(r => {\n"
      "    a = r.value\n    b = r.value + 1\n    c = r.value * 2\n    d = r.value - 1\n"
      "    p = r.value > 0\n    q = r.value < 3\n"
      "    { out: " +
      expr + ", uses: a + b + c + d, flags: p && q }\n  })\n";
  CompileRequest req;
  req.path = "chain.pipe";
  req.text = c.text;
  req.target = CompileTarget::CheckOnly;
  CompileResult r = compile(req);
  c.diags = r.program->diags.all();
  std::ostringstream out;
  r.program->diags.print(out, false);
  c.printed = out.str();
  return c;
}

TEST(ChainedComparison, IsOneErrorOverTheWholeChainWithBothReadings) {
  Checked c = check_expr("a < 2 < 3");
  auto chains = c.of(DiagKind::chained_comparison);
  ASSERT_EQ(chains.size(), 1u) << c.printed;
  EXPECT_EQ(c.diags.size(), 1u) << c.printed;  // nothing else: the chain's type is an error, not reported again
  EXPECT_EQ(c.spanned(*chains[0]), "a < 2 < 3");
  EXPECT_NE(chains[0]->message.find("the bool `a < 2` with `3`"), std::string::npos) << chains[0]->message;
  EXPECT_NE(chains[0]->help.find("`a < 2 && 2 < 3`"), std::string::npos) << chains[0]->help;
  EXPECT_NE(chains[0]->help.find("`(a < 2) < 3`"), std::string::npos) << chains[0]->help;
  EXPECT_EQ(chains[0]->replacement, "a < 2 && 2 < 3");
  // The caret line underlines the whole chain.
  EXPECT_NE(c.printed.find("^~~~~~~~"), std::string::npos) << c.printed;
}

TEST(ChainedComparison, EveryPairOfComparisonOperatorsIsAChain) {
  const char* ops[] = {"==", "!=", "<", "<=", ">", ">="};
  for (const char* x : ops)
    for (const char* y : ops) {
      const std::string e = std::string("a ") + x + " b " + y + " c";
      Checked c = check_expr(e);
      auto chains = c.of(DiagKind::chained_comparison);
      ASSERT_EQ(chains.size(), 1u) << e << "\n" << c.printed;
      EXPECT_EQ(c.spanned(*chains[0]), e);
      EXPECT_EQ(chains[0]->replacement, std::string("a ") + x + " b && b " + y + " c");
    }
}

TEST(ChainedComparison, ALongerChainIsOneErrorAndItsHelpNamesEveryLink) {
  Checked c = check_expr("a < b <= c != d");
  auto chains = c.of(DiagKind::chained_comparison);
  ASSERT_EQ(chains.size(), 1u) << c.printed;
  EXPECT_EQ(c.spanned(*chains[0]), "a < b <= c != d");
  EXPECT_EQ(chains[0]->replacement, "a < b && b <= c && c != d");
  EXPECT_NE(chains[0]->help.find("`((a < b) <= c) != d`"), std::string::npos) << chains[0]->help;
}

TEST(ChainedComparison, ChainsInsideOtherExpressionsAreFound) {
  for (const char* e : {"p && a < b < c", "[a < b < c, q]", "!(a == b == c)", "where(a < b < c, 1, 2)",
                        "(a < b < c) || p", "a < b < c < d || (c > d > a)"}) {
    Checked c = check_expr(e);
    EXPECT_FALSE(c.of(DiagKind::chained_comparison).empty()) << e << "\n" << c.printed;
  }
  // Two separate chains: two errors.
  EXPECT_EQ(check_expr("a < b < c < d || (c > d > a)").of(DiagKind::chained_comparison).size(), 2u);
}

TEST(ChainedComparison, ParenthesizedComparisonsOfBoolsAreLegal) {
  for (const char* e : {"(a < b) == p", "a == (b < c)", "(a < b) == (c < d)", "(a < 2) < 3", "((a < b)) != q"}) {
    Checked c = check_expr(e);
    EXPECT_TRUE(c.diags.empty()) << e << "\n" << c.printed;
  }
  // Parenthesized operands, but the outer two comparisons still chain.
  Checked c = check_expr("(a < b) == (c < d) == p");
  auto chains = c.of(DiagKind::chained_comparison);
  ASSERT_EQ(chains.size(), 1u) << c.printed;
  EXPECT_EQ(chains[0]->replacement, "(a < b) == (c < d) && (c < d) == p");
}

TEST(ChainedComparison, OperandsAreStillCheckedAndParenthesizedInTheHelp) {
  Checked c = check_expr("nope < (p && q) < c");
  EXPECT_EQ(c.of(DiagKind::unknown_name).size(), 1u) << c.printed;
  auto chains = c.of(DiagKind::chained_comparison);
  ASSERT_EQ(chains.size(), 1u) << c.printed;
  EXPECT_EQ(chains[0]->replacement, "nope < (p && q) && (p && q) < c");
}

TEST(ChainedComparison, ConstantChainsAreRefusedToo) {
  // `const C = 1 < 2 < 3` once folded to true while the same chain at run time meant `(x < 2) < true`.
  CompileRequest req;
  req.path = "const.pipe";
  req.text = "const C = 1 < 2 < 3\nconst D = (1 < 2) < 3\npipeline t = range(1) | map(r => { c: C, d: D })\n";
  req.target = CompileTarget::CheckOnly;
  CompileResult r = compile(req);
  int chains = 0;
  for (const Diagnostic& d : r.program->diags.all()) chains += d.kind == DiagKind::chained_comparison;
  EXPECT_EQ(chains, 1);
}

// The language server shows the error where `pipec check` does, and every feature still works.
TEST(ChainedComparison, TheLanguageServerReportsItAndKeepsServing) {
  using namespace lsp::test_client;
  lsp::test_client::Client client;
  client.initialize();
  const std::string text = "pipeline t = range(4) | map(r => { a: r.value < 2 < 3, b: (r.value < 2) == 3 })\n";
  client.open(text);
  lsp::JsonView diags = client.diagnostics();
  ASSERT_EQ(diags.size(), 1u) << diags;
  EXPECT_EQ(diags[size_t(0)]["code"].as_string(), "chained_comparison");
  EXPECT_EQ(diags[size_t(0)]["range"], range(0, 38, 0, 53)) << diags;  // `r.value < 2 < 3`
  client.request("textDocument/hover", at(0, 40));
  client.request("textDocument/completion", at(0, 40));
  client.request("textDocument/semanticTokens/full", lsp::Json::object({{"textDocument", text_document()}}));
  lsp::JsonView f = client.request("textDocument/formatting", lsp::Json::object({{"textDocument", text_document()}}));
  // Already formatted: the chain and the parentheses stay as written.
  EXPECT_EQ(f["result"], lsp::Json::array()) << f;
}

}  // namespace
}  // namespace pipec

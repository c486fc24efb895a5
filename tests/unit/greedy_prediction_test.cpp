// The parser's greedy first-stage prediction (compiler/front/greedy_prediction.h) against ANTLR's own:
// both stages together must give the same tree and the same syntax errors with either, on every spec of
// the repository, on random generated specs, and on random edits of them (where the first stage fails
// and the second reports errors). It would show a greedy answer that ANTLR does not give, or a wrong
// guess that is not caught by the second stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "PipeParser.h"
#include "antlr4-runtime.h"
#include "compiler/front/greedy_prediction.h"
#include "compiler/front/parser.h"
#include "tests/difftest/spec_generator.h"

namespace pipec {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> repository_specs() {
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"examples", "stdlib", "tests", "bench"}) {
    const std::filesystem::path root = std::filesystem::path(PIPEC_SOURCE_DIR) / dir;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root))
      if (e.is_regular_file() && e.path().extension() == ".pipe") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The same tree and errors; and the greedy first stage parses whatever ANTLR's first stage parses,
// unless `wrong_guess_allowed` (else a wrong guess would cost every such file a second, slow parse).
void expect_same_parse(const std::string& text, const std::string& what, bool wrong_guess_allowed = false) {
  const ParseTreeText greedy = parse_tree_text(text, true);
  const ParseTreeText antlr = parse_tree_text(text, false);
  EXPECT_EQ(greedy.tree, antlr.tree) << what << ":\n" << text;
  if (!wrong_guess_allowed) {
    EXPECT_EQ(greedy.first_stage_parsed, antlr.first_stage_parsed) << what << " (first stage):\n" << text;
  }
}

TEST(GreedyPrediction, FindsBothDecisionsInTheGrammar) {
  antlr4::ANTLRInputStream input("");
  antlr4::CommonTokenStream tokens(nullptr);
  pipegen::PipeParser parser(&tokens);
  EXPECT_TRUE(use_greedy_prediction(parser))
      << "the grammar changed: greedy_prediction.cpp finds its decisions by shape";
}

TEST(GreedyPrediction, EverySpecOfTheRepositoryParsesAsWithAntlrsPrediction) {
  const std::vector<std::filesystem::path> files = repository_specs();
  ASSERT_GT(files.size(), 400u);
  for (const auto& f : files) expect_same_parse(read_file(f), f.string());
}

TEST(GreedyPrediction, RandomSpecsParseAsWithAntlrsPrediction) {
  for (uint64_t seed = 1; seed <= 150; ++seed)
    expect_same_parse(difftest::generate_case(seed).spec, "seed " + std::to_string(seed));
}

// Edits that make the ambiguous places ambiguous in new ways (a bracket or brace more or less, two
// lines run together, a `;` gone) and broken files whose first stage fails: the syntax errors must be
// the same too.
TEST(GreedyPrediction, RandomEditsParseAsWithAntlrsPrediction) {
  const std::vector<std::filesystem::path> files = repository_specs();
  std::mt19937_64 rng(20261130);
  const std::vector<std::string> inserts = {"(", ")", "[", "]", "{", "}", ";", ",", ":", "=>", "\n", " x ", "="};
  int edits = 0;
  for (size_t i = 0; i < files.size(); i += 3) {
    std::string text = read_file(files[i]);
    if (text.empty()) continue;
    for (int k = 0; k < 2; ++k) {
      std::string edited = text;
      const size_t at = rng() % edited.size();
      switch (rng() % 3) {
        case 0: edited.insert(at, inserts[rng() % inserts.size()]); break;
        case 1: edited.erase(at, 1 + rng() % 3); break;
        default:
          if (const size_t nl = edited.find('\n', at); nl != std::string::npos) edited.erase(nl, 1);
      }
      // An edit may write a statement followed by a lambda, the one wrong guess.
      expect_same_parse(edited, files[i].string() + " edited", /*wrong_guess_allowed=*/true);
      ++edits;
    }
  }
  EXPECT_GT(edits, 250);
}

// Where the greedy answer is wrong the first stage fails and the second parses what ANTLR parses: a
// statement without `;` followed by a lambda, read as a call `x(y)` first. Where both readings parse
// (`g = f (y) (z)`: `g = f(y)` then `(z)`, or `g = f` then `(y)(z)`), ANTLR's: the call. The lambda
// bodies: `{ x: 1 }` a record, `{ x }` a block, as ANTLR decides.
TEST(GreedyPrediction, AWrongGuessIsTheSecondStagesToCorrect) {
  const std::string lambda_after_statement = R"(fn f(x: f32[2]) -> f32[2] {
  g = x
  (y) => y
}
)";
  const ParseTreeText greedy = parse_tree_text(lambda_after_statement, true);
  const ParseTreeText antlr = parse_tree_text(lambda_after_statement, false);
  EXPECT_EQ(greedy.tree, antlr.tree);
  EXPECT_FALSE(greedy.first_stage_parsed) << "the guess is wrong here";
  EXPECT_TRUE(antlr.first_stage_parsed);
  EXPECT_NE(greedy.tree.find("(lambdaParams ( (name y) ))"), std::string::npos) << greedy.tree;
  EXPECT_EQ(greedy.tree.find('\n'), std::string::npos) << "no syntax error: " << greedy.tree;

  const std::string both_parse = "const c = { g = f (y) (z) }\n";
  expect_same_parse(both_parse, "both readings parse");
  EXPECT_NE(parse_tree_text(both_parse, true).tree.find("(stmt (name g) = (expr (expr (primary (name f))) ( (argList"),
            std::string::npos)
      << parse_tree_text(both_parse, true).tree;

  for (const char* body : {"r => { x: 1 }", "r => { x, y }", "r => { x }", "r => { a = 1; a } + 1", "r => {x}(2)"}) {
    const std::string spec = std::string("const c = ") + body + "\n";
    expect_same_parse(spec, body);
  }
}

}  // namespace
}  // namespace pipec

// The editor syntax files cannot drift from the language: every keyword of grammar/Pipe.g4, every dtype
// and every builtin in the registry must be highlighted by the TextMate grammar and the Vim syntax file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "compiler/sema/builtins.h"
#include "runtime/core/dtype.h"

namespace pipec {
namespace {

using Json = nlohmann::json;

std::string read_file(const std::string& rel) {
  std::ifstream in(std::string(PIPEC_SOURCE_DIR) + "/" + rel, std::ios::binary);
  EXPECT_TRUE(in.good()) << rel;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Json load_json(const std::string& rel) {
  Json j = Json::parse(read_file(rel), nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << rel << " is not valid JSON";
  return j;
}

/// The string member `key` of `j`, or "" (the files are read, not trusted).
std::string str(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

struct Rule {
  std::string source;
  std::regex re;
  std::vector<std::string> scopes;  // the rule's name and the names of its captures
};

// Every `match` rule of the grammar with the scopes it assigns.
void collect_rules(const Json& node, std::vector<Rule>& out, std::vector<std::string>& bad) {
  if (node.is_array()) {
    for (const Json& item : node) collect_rules(item, out, bad);
    return;
  }
  if (!node.is_object()) return;
  for (const char* key : {"match", "begin", "end"}) {
    std::string pattern = str(node, key);
    if (pattern.empty()) continue;
    std::regex re;
    try {
      re = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      bad.push_back(pattern + " (" + e.what() + ")");
      continue;
    }
    if (std::string(key) != "match") continue;
    Rule r{pattern, re, {}};
    if (!str(node, "name").empty()) r.scopes.push_back(str(node, "name"));
    if (node.contains("captures") && node["captures"].is_object())
      for (const auto& capture : node["captures"].items())
        if (!str(capture.value(), "name").empty()) r.scopes.push_back(str(capture.value(), "name"));
    out.push_back(std::move(r));
  }
  for (const auto& child : node.items())
    if (child.key() != "match" && child.key() != "begin" && child.key() != "end")
      collect_rules(child.value(), out, bad);
}

std::vector<Rule> grammar_rules() {
  Json g = load_json("grammar/pipe.tmLanguage.json");
  std::vector<Rule> rules;
  std::vector<std::string> bad;
  collect_rules(g, rules, bad);
  for (const auto& b : bad) ADD_FAILURE() << "not a valid ECMAScript regex: " << b;
  return rules;
}

/// True when some rule with a scope starting with `scope_prefix` matches all of `word`.
bool highlighted(const std::vector<Rule>& rules, const std::string& word, const std::string& scope_prefix) {
  for (const Rule& r : rules) {
    bool scope_ok = false;
    for (const auto& s : r.scopes)
      if (s.rfind(scope_prefix, 0) == 0) scope_ok = true;
    if (!scope_ok) continue;
    std::smatch m;
    if (std::regex_search(word, m, r.re) && m.position(0) == 0 && static_cast<size_t>(m.length(0)) == word.size())
      return true;
  }
  return false;
}

/// The literal keyword tokens of the ANTLR grammar: `IMPORT : 'import' ;` and the like.
std::vector<std::string> grammar_keywords() {
  std::string g4 = read_file("grammar/Pipe.g4");
  std::regex token(R"(^\s*[A-Z][A-Z_]*\s*:\s*'([a-z_]+)'\s*;)", std::regex::multiline);
  std::vector<std::string> words;
  for (auto it = std::sregex_iterator(g4.begin(), g4.end(), token); it != std::sregex_iterator(); ++it)
    words.push_back((*it)[1].str());
  return words;
}

std::vector<std::string> dtype_words() {
  return {
#define PIPEC_DTYPE_WORD(name, text, size) text,
      PIPEC_DTYPES(PIPEC_DTYPE_WORD)
#undef PIPEC_DTYPE_WORD
  };
}

TEST(SyntaxFiles, GrammarIsValidAndEveryRegexIsEcmaScript) {
  Json g = load_json("grammar/pipe.tmLanguage.json");
  EXPECT_EQ(str(g, "scopeName"), "source.pipe");
  EXPECT_EQ(g.at("fileTypes").at(0).get<std::string>(), "pipe");
  std::vector<Rule> rules = grammar_rules();
  EXPECT_GT(rules.size(), 10u);
  // Every `include` names a repository entry.
  std::vector<std::string> includes;
  std::function<void(const Json&)> find = [&](const Json& n) {
    if (n.is_object()) {
      if (!str(n, "include").empty()) includes.push_back(str(n, "include"));
      for (const auto& v : n) find(v);
    } else if (n.is_array()) {
      for (const auto& v : n) find(v);
    }
  };
  find(g);
  for (const auto& inc : includes) {
    ASSERT_EQ(inc.substr(0, 1), "#") << inc;
    EXPECT_TRUE(g.at("repository").contains(inc.substr(1))) << inc;
  }
}

TEST(SyntaxFiles, EveryGrammarKeywordIsHighlighted) {
  std::vector<std::string> keywords = grammar_keywords();
  // The declaration keywords and true/false.
  std::set<std::string> expected = {"import", "const", "fn", "source", "pipeline", "model", "train", "true", "false"};
  EXPECT_EQ(std::set<std::string>(keywords.begin(), keywords.end()), expected);
  std::vector<Rule> rules = grammar_rules();
  for (const auto& k : keywords)
    EXPECT_TRUE(highlighted(rules, k, "keyword.") || highlighted(rules, k, "constant.language"))
        << "keyword `" << k << "` is not highlighted by grammar/pipe.tmLanguage.json";
}

TEST(SyntaxFiles, EveryDtypeIsHighlighted) {
  std::vector<Rule> rules = grammar_rules();
  std::vector<std::string> dtypes = dtype_words();
  EXPECT_EQ(dtypes.size(), 14u);
  for (const auto& t : dtypes)
    EXPECT_TRUE(highlighted(rules, t, "storage.type")) << "dtype `" << t << "` is not highlighted";
}

TEST(SyntaxFiles, EveryBuiltinIsHighlighted) {
  std::vector<Rule> rules = grammar_rules();
  ASSERT_FALSE(all_builtins().empty());
  for (const Builtin& b : all_builtins())
    EXPECT_TRUE(highlighted(rules, b.name, "support.function"))
        << builtin_kind_name(b.kind) << " `" << b.name
        << "` is not in grammar/pipe.tmLanguage.json (add it to the `builtin` patterns, and to "
           "grammar/vim/syntax/pipe.vim)";
  for (const std::string& w : standalone_option_words())
    EXPECT_TRUE(highlighted(rules, w, "constant.language") || highlighted(rules, w, "storage.type"))
        << "option word `" << w << "` is not highlighted";
}

TEST(SyntaxFiles, NumbersOperatorsAndCommentsAreHighlighted) {
  std::vector<Rule> rules = grammar_rules();
  for (const char* n : {"10_000", "1e-3", "0x1F", "0b1010", "0.5", "2.5e+4", "42"})
    EXPECT_TRUE(highlighted(rules, n, "constant.numeric")) << n;
  EXPECT_TRUE(highlighted(rules, "|", "keyword.operator.pipe"));
  for (const char* op : {"=>", "->", "==", "**", "//", "&&", "||", "+", "="})
    EXPECT_TRUE(highlighted(rules, op, "keyword.operator")) << op;
  EXPECT_TRUE(highlighted(rules, "# a comment", "comment."));
  // Declaration keywords are contextual: `train` in the middle of a line is a name.
  std::smatch m;
  for (const Rule& r : rules) {
    bool keyword = false;
    for (const auto& s : r.scopes)
      if (s.rfind("keyword.other.declaration", 0) == 0) keyword = true;
    if (!keyword) continue;
    std::string line = "pipeline train = positions";
    for (auto it = std::sregex_iterator(line.begin(), line.end(), r.re); it != std::sregex_iterator(); ++it)
      EXPECT_NE((*it)[0].str(), "train") << r.source;
  }
}

std::set<std::string> vim_keyword_words(const std::string& vim) {
  std::set<std::string> words;
  std::istringstream in(vim);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string syn, keyword, group, w;
    ls >> syn >> keyword >> group;
    if (syn != "syn" || keyword != "keyword") continue;
    while (ls >> w) words.insert(w);
  }
  return words;
}

TEST(SyntaxFiles, VimSyntaxHasTheSameWords) {
  std::string vim = read_file("grammar/vim/syntax/pipe.vim");
  std::set<std::string> words = vim_keyword_words(vim);
  for (const Builtin& b : all_builtins())
    EXPECT_TRUE(words.count(b.name)) << "`" << b.name << "` is missing from grammar/vim/syntax/pipe.vim";
  for (const auto& t : dtype_words()) EXPECT_TRUE(words.count(t)) << t;
  for (const std::string& w : standalone_option_words()) EXPECT_TRUE(words.count(w)) << w;
  for (const auto& k : grammar_keywords()) {
    bool found = words.count(k) || vim.find("\\|" + k + "\\|") != std::string::npos ||
                 vim.find("\\(" + k + "\\|") != std::string::npos || vim.find("\\|" + k + "\\)") != std::string::npos;
    EXPECT_TRUE(found) << "keyword `" << k << "` is missing from grammar/vim/syntax/pipe.vim";
  }
  std::string ftdetect = read_file("grammar/vim/ftdetect/pipe.vim");
  EXPECT_NE(ftdetect.find("*.pipe"), std::string::npos);
  EXPECT_NE(ftdetect.find("setfiletype pipe"), std::string::npos);
}

TEST(SyntaxFiles, VsCodeExtensionIsComplete) {
  Json pkg = load_json("grammar/vscode/package.json");
  const Json& lang = pkg.at("contributes").at("languages").at(0);
  EXPECT_EQ(str(lang, "id"), "pipe");
  EXPECT_EQ(lang.at("extensions").at(0).get<std::string>(), ".pipe");
  const Json& grammar = pkg.at("contributes").at("grammars").at(0);
  EXPECT_EQ(str(grammar, "scopeName"), "source.pipe");
  std::string path = str(grammar, "path");
  ASSERT_EQ(path.substr(0, 2), "./");
  // The extension ships a copy of the grammar: it must be identical to grammar/pipe.tmLanguage.json.
  EXPECT_EQ(read_file("grammar/vscode/" + path.substr(2)), read_file("grammar/pipe.tmLanguage.json"))
      << "copy grammar/pipe.tmLanguage.json to grammar/vscode/" << path.substr(2);
  EXPECT_EQ(str(pkg, "main"), "./extension.js");
  EXPECT_TRUE(pkg.at("dependencies").contains("vscode-languageclient"));
  Json conf = load_json("grammar/vscode/language-configuration.json");
  EXPECT_EQ(str(conf.at("comments"), "lineComment"), "#");
  std::set<std::string> pairs;
  for (const Json& p : conf.at("brackets")) pairs.insert(p.at(0).get<std::string>() + p.at(1).get<std::string>());
  EXPECT_EQ(pairs, (std::set<std::string>{"{}", "[]", "()"}));
  std::string ext = read_file("grammar/vscode/extension.js");
  EXPECT_NE(ext.find("vscode-languageclient"), std::string::npos);
  EXPECT_NE(ext.find("'lsp'"), std::string::npos);
}

}  // namespace
}  // namespace pipec

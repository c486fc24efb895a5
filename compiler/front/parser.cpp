// Drives the ANTLR lexer and parser and hands the tree to the AST builder.
//
// The lexer runs first on its own so that bad characters become diagnostics of their own and never reach
// the parser, and so that nesting depth can be checked before ANTLR recurses into it.
#include "compiler/front/parser.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "PipeLexer.h"
#include "PipeParser.h"
#include "antlr4-runtime.h"
#include "compiler/front/ast_builder.h"
#include "compiler/front/big_stack.h"
#include "compiler/front/greedy_prediction.h"

namespace pipec {

namespace {

SourceRange token_range(uint32_t file, const antlr4::Token* t) {
  if (!t) return {file, 0, 0};
  size_t start = t->getStartIndex();
  size_t stop = t->getStopIndex();
  if (t->getType() == antlr4::Token::EOF || stop < start) stop = start == 0 ? 0 : start - 1;
  if (t->getType() == antlr4::Token::EOF) return {file, static_cast<uint32_t>(start), static_cast<uint32_t>(start)};
  return {file, static_cast<uint32_t>(start), static_cast<uint32_t>(stop + 1)};
}

// `end` names the end of the input: "end of file", or "end of the value" for a -D value.
std::string describe_token(const antlr4::Token* t, const antlr4::dfa::Vocabulary& vocab,
                           const char* end = "end of file") {
  if (!t || t->getType() == antlr4::Token::EOF) return end;
  std::string text = t->getText();
  if (text.size() > 24) text = text.substr(0, 21) + "...";
  return "`" + text + "`";
}

// ANTLR's own input stream decodes UTF-8 into code points, so its token offsets would count characters
// while every SourceRange counts bytes, and it throws on bytes that are not UTF-8. This stream gives the
// lexer one symbol per byte instead: token offsets are byte offsets, any file can be lexed, and non-ASCII
// bytes (meaningful only inside strings and comments) reach the lexer as symbols 0x80..0xFF.
class ByteInputStream : public antlr4::ANTLRInputStream {
 public:
  explicit ByteInputStream(const std::string& text) : text_(text) {
    _data.clear();
    _data.reserve(text.size());
    for (unsigned char c : text) _data.push_back(static_cast<char32_t>(c));
  }

  // Token text is the file's own bytes, so strings and comments keep their UTF-8 as written.
  std::string getText(const antlr4::misc::Interval& interval) override {
    if (interval.a < 0 || interval.b < 0) return "";
    size_t start = static_cast<size_t>(interval.a);
    size_t stop = std::min(static_cast<size_t>(interval.b), text_.size() - 1);
    if (start >= text_.size() || stop < start) return "";
    return text_.substr(start, stop - start + 1);
  }

 private:
  const std::string& text_;
};

// The length of the UTF-8 sequence starting at `text[at]`, or 0 when it is not a valid one.
size_t utf8_length(const std::string& text, size_t at) {
  unsigned char c = static_cast<unsigned char>(text[at]);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || at + n > text.size()) return 0;
  for (size_t i = 1; i < n; ++i)
    if ((static_cast<unsigned char>(text[at + i]) & 0xC0) != 0x80) return 0;
  return n;
}

// Reports one character the language does not use (a whole UTF-8 character counts as one); returns how
// many bytes it covered.
size_t report_bad_character(const std::string& text, uint32_t file, uint32_t at, Diagnostics& diags) {
  unsigned char c = static_cast<unsigned char>(text[at]);
  if (c >= 0x80) {
    if (size_t n = utf8_length(text, at)) {
      diags.report(
          DiagKind::bad_character, {file, at, static_cast<uint32_t>(at + n)},
          "unexpected character `" + text.substr(at, n) + "`: names are made of ASCII letters, digits and `_`");
      return n;
    }
    diags.report(DiagKind::bad_character, {file, at, at + 1},
                 fmt::format("unexpected byte 0x{:02X}; the file is not valid UTF-8 here", c));
    return 1;
  }
  if (c < 0x20 || c == 0x7F) {
    diags.report(DiagKind::bad_character, {file, at, at + 1}, fmt::format("unexpected control character 0x{:02X}", c));
    return 1;
  }
  diags.report(DiagKind::bad_character, {file, at, at + 1}, std::string("unexpected character `") + char(c) + "`");
  return 1;
}

const char* const kDeclaration = "a declaration (`import`, `const`, `fn`, `source`, `pipeline`, `model` or `train`)";

// Turns ANTLR's syntax errors into diagnostics with readable messages.
class ErrorListener : public antlr4::BaseErrorListener {
 public:
  ErrorListener(uint32_t file, Diagnostics& diags, const char* end = "end of file")
      : file_(file), diags_(diags), end_(end) {}

  /// True once a syntax error was reported.
  bool reported() const { return reported_; }

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t, size_t, const std::string&,
                   std::exception_ptr) override {
    auto* parser = dynamic_cast<antlr4::Parser*>(recognizer);
    std::string msg = "unexpected " + describe_token(offending, recognizer->getVocabulary(), end_);
    if (parser) {
      std::string expected = expected_tokens(parser, end_);
      const antlr4::Token* prev = parser->getTokenStream()->LT(-1);
      if (expected == kDeclaration && prev && offending && offending->getType() != antlr4::Token::EOF &&
          prev->getLine() == offending->getLine()) {
        // The parser ended the declaration early because the expression could not go on here; a list of
        // declaration keywords would only mislead, so say where the expression stopped instead.
        msg += " after " + describe_token(prev, recognizer->getVocabulary(), end_);
      } else if (!expected.empty()) {
        msg += ", expected " + expected;
      }
    }
    SourceRange r = token_range(file_, offending);
    // ANTLR may report several errors at one token while recovering; one is enough.
    if (r.begin == last_offset_ && reported_) return;
    last_offset_ = r.begin;
    reported_ = true;
    diags_.report(DiagKind::syntax_error, r, msg);
  }

 private:
  static std::string expected_tokens(antlr4::Parser* parser, const char* end) {
    antlr4::misc::IntervalSet set;
    try {
      set = parser->getExpectedTokens();
    } catch (...) {
      return "";
    }
    // Sets that mean "anything that starts a declaration / an expression" get a name of their own.
    using L = pipegen::PipeLexer;
    auto has = [&](size_t token) { return set.contains(token); };
    if (has(L::CONST) && has(L::FN) && has(L::SOURCE) && has(L::PIPELINE) && has(L::MODEL) && has(L::TRAIN) &&
        has(L::IMPORT) && set.size() <= 8)
      return kDeclaration;
    if (has(L::INT) && has(L::STRING) && has(L::LPAREN) && has(L::ID)) return "an expression";
    std::vector<std::string> names;
    for (ssize_t t : set.toList()) {
      if (static_cast<size_t>(t) == antlr4::Token::EOF) {
        names.push_back(end);
        continue;
      }
      std::string lit = parser->getVocabulary().getLiteralName(t);
      if (!lit.empty()) {
        names.push_back("`" + lit.substr(1, lit.size() - 2) + "`");
      } else {
        std::string sym = parser->getVocabulary().getSymbolicName(t);
        if (sym == "ID") sym = "a name";
        else if (sym == "INT") sym = "an integer";
        else if (sym == "FLOAT") sym = "a number";
        else if (sym == "STRING") sym = "a string";
        else continue;
        names.push_back(sym);
      }
    }
    // A long list helps nobody; name the expectation only when it is specific.
    if (names.empty() || names.size() > 6) return "";
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i) out += i + 1 == names.size() ? " or " : ", ";
      out += names[i];
    }
    return out;
  }

  uint32_t file_;
  Diagnostics& diags_;
  const char* end_;
  size_t last_offset_ = SIZE_MAX;
  bool reported_ = false;
};

// Lexes the whole file; bad characters are reported and dropped. Returns false when nesting is too deep
// to parse safely.
bool lex(const SourceManager& sources, uint32_t file, Diagnostics& diags, pipegen::PipeLexer& lexer,
         std::vector<std::unique_ptr<antlr4::Token>>& tokens) {
  const std::string& text = sources.file(file).text();
  lexer.removeErrorListeners();
  int depth = 0;
  int max_depth = 0;
  SourceRange deepest;
  std::vector<const antlr4::Token*> open;  // brackets not closed yet
  size_t covered_until = 0;                // bytes up to here belong to a bad character already reported
  for (;;) {
    std::unique_ptr<antlr4::Token> tok = lexer.nextToken();
    size_t type = tok->getType();
    if (type == pipegen::PipeLexer::BAD_CHAR) {
      SourceRange r = token_range(file, tok.get());
      if (r.begin < covered_until) continue;
      if (tok->getText() != "\"") {
        covered_until = r.begin + report_bad_character(text, file, r.begin, diags);
        continue;
      }
      // An unterminated string runs to the end of its line: the parser sees one string token there (as if
      // it were closed), so the words inside it are not parsed as code and nothing else is reported.
      size_t eol = text.find_first_of("\r\n", r.begin);
      if (eol == std::string::npos) eol = text.size();
      diags.report(DiagKind::unterminated_string, {file, r.begin, static_cast<uint32_t>(eol)},
                   "string literal is not closed before the end of the line");
      auto str = std::make_unique<antlr4::CommonToken>(tok.get());
      str->setType(pipegen::PipeLexer::STRING);
      str->setStopIndex(eol - 1);
      str->setText(text.substr(r.begin, eol - r.begin) + "\"");
      tokens.push_back(std::move(str));
      // The closing quote usually went missing together with the brackets after it (`files("a/*.png)`):
      // brackets opened earlier on the same line are closed here, so that the line parses as intended.
      size_t line_start = text.find_last_of("\r\n", r.begin);
      line_start = line_start == std::string::npos ? 0 : line_start + 1;
      while (!open.empty() && open.back()->getStartIndex() >= line_start) {
        size_t type = open.back()->getType();
        auto close = std::make_unique<antlr4::CommonToken>(tok.get());
        close->setType(type == pipegen::PipeLexer::LPAREN   ? pipegen::PipeLexer::RPAREN
                       : type == pipegen::PipeLexer::LBRACK ? pipegen::PipeLexer::RBRACK
                                                            : pipegen::PipeLexer::RBRACE);
        close->setText(type == pipegen::PipeLexer::LPAREN ? ")" : type == pipegen::PipeLexer::LBRACK ? "]" : "}");
        close->setStartIndex(eol - 1);
        close->setStopIndex(eol - 1);
        tokens.push_back(std::move(close));
        open.pop_back();
        if (depth > 0) --depth;
      }
      covered_until = eol;
      bool at_eof = false;
      for (;;) {
        std::unique_ptr<antlr4::Token> rest = lexer.nextToken();
        at_eof = rest->getType() == antlr4::Token::EOF;
        if (at_eof || rest->getStartIndex() >= eol) {
          // The first token past the line (a line break, or the end of the file) is kept.
          tokens.push_back(std::move(rest));
          break;
        }
      }
      if (at_eof) break;
      continue;
    }
    if (type == pipegen::PipeLexer::LPAREN || type == pipegen::PipeLexer::LBRACK ||
        type == pipegen::PipeLexer::LBRACE) {
      if (++depth > max_depth) {
        max_depth = depth;
        deepest = token_range(file, tok.get());
      }
      open.push_back(tok.get());
    } else if (type == pipegen::PipeLexer::RPAREN || type == pipegen::PipeLexer::RBRACK ||
               type == pipegen::PipeLexer::RBRACE) {
      if (depth > 0) --depth;
      if (!open.empty()) open.pop_back();
    }
    bool eof = type == antlr4::Token::EOF;
    tokens.push_back(std::move(tok));
    if (eof) break;
  }
  if (max_depth > kMaxNestingDepth) {
    diags.report(DiagKind::nesting_too_deep, deepest,
                 "brackets nest " + std::to_string(max_depth) + " levels deep; at most " +
                     std::to_string(kMaxNestingDepth) + " are allowed");
    return false;
  }
  return true;
}

// Two stages, as ANTLR recommends: the fast SLL prediction parses every valid spec (several times faster
// than full LL on long expressions), with its own answers to expr's decisions (greedy_prediction.h);
// only when it fails is the file parsed again with full LL, ANTLR's own prediction and error recovery,
// which gives the exact syntax errors.
// `first_stage_parsed`, when given, says which stage parsed the file.
pipegen::PipeParser::ProgramContext* parse_two_stages(pipegen::PipeParser& parser, ErrorListener& listener, bool greedy,
                                                      bool* first_stage_parsed = nullptr) {
  if (greedy) use_greedy_prediction(parser);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  try {
    pipegen::PipeParser::ProgramContext* tree = parser.program();
    if (first_stage_parsed) *first_stage_parsed = true;
    return tree;
  } catch (const antlr4::ParseCancellationException&) {
    parser.reset();
    use_antlr_prediction(parser);
    parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::LL);
    parser.addErrorListener(&listener);
    return parser.program();
  }
}

// `tree_text`, when given, receives ANTLR's tree in LISP form (parse_tree_text).
std::unique_ptr<Module> parse_impl(const SourceManager& sources, uint32_t file_id, Diagnostics& diags,
                                   bool greedy = true, ParseTreeText* tree_text = nullptr) {
  auto module = std::make_unique<Module>();
  module->file = file_id;
  const std::string& text = sources.file(file_id).text();
  ByteInputStream input(text);
  // The lexer must outlive the parser: tokens point back at it, and error recovery asks it for the
  // input when it makes up a missing token.
  pipegen::PipeLexer lexer(&input);
  std::vector<std::unique_ptr<antlr4::Token>> tokens;
  if (!lex(sources, file_id, diags, lexer, tokens)) return module;

  // Comments are kept for the formatter and for doc strings.
  for (const auto& t : tokens) {
    if (t->getType() != pipegen::PipeLexer::COMMENT) continue;
    Comment c;
    c.range = token_range(file_id, t.get());
    c.text = t->getText();
    uint32_t b = c.range.begin;
    c.own_line = true;
    while (b > 0 && text[b - 1] != '\n') {
      if (text[b - 1] != ' ' && text[b - 1] != '\t') {
        c.own_line = false;
        break;
      }
      --b;
    }
    module->comments.push_back(std::move(c));
  }

  antlr4::ListTokenSource source(std::move(tokens));
  antlr4::CommonTokenStream stream(&source);
  pipegen::PipeParser parser(&stream);
  parser.removeErrorListeners();
  ErrorListener listener(file_id, diags);
  pipegen::PipeParser::ProgramContext* tree = nullptr;
  try {
    tree = parse_two_stages(parser, listener, greedy, tree_text ? &tree_text->first_stage_parsed : nullptr);
  } catch (const std::exception& e) {
    diags.report(DiagKind::syntax_error, {file_id, 0, 0}, std::string("the parser gave up: ") + e.what());
    return module;
  }
  if (tree_text) tree_text->tree = tree->toStringTree(&parser);
  build_ast(tree, file_id, text, diags, *module);
  return module;
}

ExprPtr parse_expression_impl(const SourceManager& sources, uint32_t file_id, uint32_t begin, Diagnostics& diags) {
  const std::string& text = sources.file(file_id).text();
  // The lexer sees blanks before `begin`, so that token offsets are offsets in the whole file.
  std::string blanked =
      std::string(std::min<size_t>(begin, text.size()), ' ') + text.substr(std::min<size_t>(begin, text.size()));
  ByteInputStream input(blanked);
  pipegen::PipeLexer lexer(&input);
  std::vector<std::unique_ptr<antlr4::Token>> tokens;
  size_t errors = diags.error_count();
  if (!lex(sources, file_id, diags, lexer, tokens) || diags.error_count() != errors) return nullptr;
  antlr4::ListTokenSource source(std::move(tokens));
  antlr4::CommonTokenStream stream(&source);
  pipegen::PipeParser parser(&stream);
  parser.removeErrorListeners();
  ErrorListener listener(file_id, diags, "end of the value");
  parser.addErrorListener(&listener);
  pipegen::PipeParser::ExprContext* tree = nullptr;
  try {
    tree = parser.expr();
  } catch (const std::exception& e) {
    diags.report(DiagKind::syntax_error, {file_id, begin, begin}, std::string("the parser gave up: ") + e.what());
    return nullptr;
  }
  if (listener.reported()) return nullptr;
  if (const antlr4::Token* next = stream.LT(1); next && next->getType() != antlr4::Token::EOF) {
    diags.report(DiagKind::syntax_error, token_range(file_id, next),
                 "unexpected " + describe_token(next, parser.getVocabulary()) + " after the value");
    return nullptr;
  }
  return build_expression(tree, file_id, text, diags);
}

}  // namespace

ExprPtr parse_expression(const SourceManager& sources, uint32_t file_id, uint32_t begin, Diagnostics& diags) {
  ExprPtr result;
  try {
    run_with_big_stack(size_t(256) << 20, [&] { result = parse_expression_impl(sources, file_id, begin, diags); });
  } catch (...) {
    diags.report(DiagKind::syntax_error, {file_id, begin, begin}, "the value could not be parsed");
    return nullptr;
  }
  return result;
}

ParseTreeText parse_tree_text(const std::string& text, bool greedy_first_stage) {
  SourceManager sources;
  Diagnostics diags(sources);
  const uint32_t id = sources.add("parse_tree_text.pipe", text);
  ParseTreeText out;
  run_with_big_stack(size_t(1) << 30, [&] { parse_impl(sources, id, diags, greedy_first_stage, &out); });
  for (const Diagnostic& d : diags.all()) out.tree += "\n" + d.message;
  return out;
}

std::unique_ptr<Module> parse_module(const SourceManager& sources, uint32_t file_id, Diagnostics& diags) {
  // ANTLR's prediction and our AST builder recurse on long operator chains; a private thread with a large
  // stack keeps even a 10 MB file of `1+1+...` from overflowing the caller's stack.
  std::unique_ptr<Module> result;
  bool failed = false;
  try {
    run_with_big_stack(size_t(1) << 30, [&] { result = parse_impl(sources, file_id, diags); });
  } catch (...) {
    failed = true;
  }
  if (failed || !result) {
    result = std::make_unique<Module>();
    result->file = file_id;
    diags.report(DiagKind::syntax_error, {file_id, 0, 0}, "the file could not be parsed");
  }
  return result;
}

}  // namespace pipec

// Drives the ANTLR lexer and parser and hands the tree to the AST builder.
//
// The lexer runs first on its own so that bad characters become diagnostics of their own and never reach
// the parser, and so that nesting depth can be checked before ANTLR recurses into it.
#include "compiler/front/parser.h"

#include <pthread.h>

#include <functional>

#include "PipeLexer.h"
#include "PipeParser.h"
#include "antlr4-runtime.h"
#include "compiler/front/ast_builder.h"

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

std::string describe_token(const antlr4::Token* t, const antlr4::dfa::Vocabulary& vocab) {
  if (!t || t->getType() == antlr4::Token::EOF) return "end of file";
  std::string text = t->getText();
  if (text.size() > 24) text = text.substr(0, 21) + "...";
  return "`" + text + "`";
}

// Turns ANTLR's syntax errors into diagnostics with readable messages.
class ErrorListener : public antlr4::BaseErrorListener {
 public:
  ErrorListener(uint32_t file, Diagnostics& diags) : file_(file), diags_(diags) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t, size_t,
                   const std::string&, std::exception_ptr) override {
    auto* parser = dynamic_cast<antlr4::Parser*>(recognizer);
    std::string msg = "unexpected " + describe_token(offending, recognizer->getVocabulary());
    if (parser) {
      std::string expected = expected_tokens(parser);
      if (!expected.empty()) msg += ", expected " + expected;
    }
    SourceRange r = token_range(file_, offending);
    // ANTLR may report several errors at one token while recovering; one is enough.
    if (r.begin == last_offset_ && reported_) return;
    last_offset_ = r.begin;
    reported_ = true;
    diags_.report(DiagKind::syntax_error, r, msg);
  }

 private:
  static std::string expected_tokens(antlr4::Parser* parser) {
    antlr4::misc::IntervalSet set;
    try {
      set = parser->getExpectedTokens();
    } catch (...) {
      return "";
    }
    std::vector<std::string> names;
    for (ssize_t t : set.toList()) {
      if (t == antlr4::Token::EOF) {
        names.push_back("end of file");
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
  size_t last_offset_ = SIZE_MAX;
  bool reported_ = false;
};

// Lexes the whole file; bad characters are reported and dropped. Returns false when nesting is too deep
// to parse safely.
bool lex(const SourceManager& sources, uint32_t file, Diagnostics& diags, antlr4::ANTLRInputStream& input,
         std::vector<std::unique_ptr<antlr4::Token>>& tokens) {
  pipegen::PipeLexer lexer(&input);
  lexer.removeErrorListeners();
  int depth = 0;
  int max_depth = 0;
  SourceRange deepest;
  for (;;) {
    std::unique_ptr<antlr4::Token> tok = lexer.nextToken();
    size_t type = tok->getType();
    if (type == pipegen::PipeLexer::BAD_CHAR) {
      SourceRange r = token_range(file, tok.get());
      if (tok->getText() == "\"")
        diags.report(DiagKind::unterminated_string, r, "string literal is not closed before the end of the line");
      else
        diags.report(DiagKind::bad_character, r, "unexpected character `" + tok->getText() + "`");
      // An unterminated string swallows the rest of its line so that its words are not parsed as code.
      if (tok->getText() == "\"") {
        for (;;) {
          std::unique_ptr<antlr4::Token> rest = lexer.nextToken();
          if (rest->getType() == antlr4::Token::EOF) {
            tokens.push_back(std::move(rest));
            return true;
          }
          if (rest->getType() == pipegen::PipeLexer::NEWLINE) break;
        }
      }
      continue;
    }
    if (type == pipegen::PipeLexer::LPAREN || type == pipegen::PipeLexer::LBRACK ||
        type == pipegen::PipeLexer::LBRACE) {
      if (++depth > max_depth) {
        max_depth = depth;
        deepest = token_range(file, tok.get());
      }
    } else if (type == pipegen::PipeLexer::RPAREN || type == pipegen::PipeLexer::RBRACK ||
               type == pipegen::PipeLexer::RBRACE) {
      if (depth > 0) --depth;
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

std::unique_ptr<Module> parse_impl(const SourceManager& sources, uint32_t file_id, Diagnostics& diags) {
  auto module = std::make_unique<Module>();
  module->file = file_id;
  const std::string& text = sources.file(file_id).text();
  antlr4::ANTLRInputStream input(text);
  std::vector<std::unique_ptr<antlr4::Token>> tokens;
  if (!lex(sources, file_id, diags, input, tokens)) return module;

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
  parser.addErrorListener(&listener);
  pipegen::PipeParser::ProgramContext* tree = nullptr;
  try {
    tree = parser.program();
  } catch (const std::exception& e) {
    diags.report(DiagKind::syntax_error, {file_id, 0, 0}, std::string("the parser gave up: ") + e.what());
    return module;
  }
  build_ast(tree, file_id, text, diags, *module);
  return module;
}

}  // namespace

std::unique_ptr<Module> parse_module(const SourceManager& sources, uint32_t file_id, Diagnostics& diags) {
  // ANTLR's prediction and our AST builder recurse on long operator chains; a private thread with a large
  // stack keeps even a 10 MB file of `1+1+...` from overflowing the caller's stack.
  std::unique_ptr<Module> result;
  std::exception_ptr error;
  std::function<void()> work = [&] {
    try {
      result = parse_impl(sources, file_id, diags);
    } catch (...) {
      error = std::current_exception();
    }
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(1) << 30);
  pthread_t thread;
  auto trampoline = [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  };
  if (pthread_create(&thread, &attr, trampoline, &work) == 0) {
    pthread_join(thread, nullptr);
  } else {
    work();
  }
  pthread_attr_destroy(&attr);
  if (error || !result) {
    result = std::make_unique<Module>();
    result->file = file_id;
    diags.report(DiagKind::syntax_error, {file_id, 0, 0}, "the file could not be parsed");
  }
  return result;
}

}  // namespace pipec

// Semantic tokens from the ANTLR lexer, refined with what the checked AST knows about names.
#include <algorithm>
#include <map>
#include <set>

#include "PipeLexer.h"
#include "antlr4-runtime.h"
#include "compiler/front/ast_query.h"
#include "compiler/lsp/analysis.h"
#include "compiler/sema/builtins.h"

namespace pipec::lsp {

namespace {

enum TokenType : uint32_t {
  Keyword,
  Variable,
  Number,
  String,
  Comment,
  Operator,
  Function,
  TypeTok,
  Parameter,
  Property
};
enum Modifier : uint32_t { Declaration = 1, DefaultLibrary = 2 };

using L = pipegen::PipeLexer;

bool is_keyword_token(size_t t) {
  return t == L::IMPORT || t == L::CONST || t == L::FN || t == L::SOURCE || t == L::PIPELINE || t == L::MODEL ||
         t == L::TRAIN;
}

bool is_operator_token(size_t t) {
  switch (t) {
    case L::FATARROW:
    case L::ARROW:
    case L::EQ:
    case L::NE:
    case L::LE:
    case L::GE:
    case L::SHL:
    case L::SHR:
    case L::OROR:
    case L::ANDAND:
    case L::POW:
    case L::SLASHSLASH:
    case L::ASSIGN:
    case L::LT:
    case L::GT:
    case L::PIPE:
    case L::AMP:
    case L::CARET:
    case L::PLUS:
    case L::MINUS:
    case L::STAR:
    case L::SLASH:
    case L::PERCENT:
    case L::BANG:
    case L::TILDE: return true;
    default: return false;
  }
}

// Feeds the lexer one symbol per byte, so token indices are byte offsets (ANTLR's own stream decodes
// UTF-8 into code points and throws on invalid bytes). Non-ASCII bytes only occur inside strings and
// comments, whose lexer rules accept any symbol.
class ByteStream : public antlr4::ANTLRInputStream {
 public:
  explicit ByteStream(const std::string& text) : text_(text) {
    _data.clear();
    _data.reserve(text.size());
    for (unsigned char c : text) _data.push_back(static_cast<char32_t>(c));
  }
  std::string getText(const antlr4::misc::Interval& interval) override {
    if (interval.a < 0 || interval.b < interval.a || static_cast<size_t>(interval.a) >= text_.size()) return "";
    size_t start = static_cast<size_t>(interval.a);
    size_t stop = std::min(static_cast<size_t>(interval.b), text_.size() - 1);
    return text_.substr(start, stop - start + 1);
  }

 private:
  const std::string& text_;
};

// Walks the text once, front to back, turning byte offsets into LSP positions (0-based line, UTF-16
// character).
class Cursor {
 public:
  explicit Cursor(const std::string& text) : text_(text) {}
  void advance_to(size_t offset) {
    offset = std::min(offset, text_.size());
    for (; byte_ < offset; ++byte_) {
      unsigned char c = static_cast<unsigned char>(text_[byte_]);
      if (c == '\n') {
        ++line_;
        col_ = 0;
      } else if ((c & 0xC0) != 0x80) {  // not a continuation byte: a new character
        col_ += c >= 0xF0 ? 2 : 1;      // 4-byte sequences are surrogate pairs in UTF-16
      }
    }
  }
  uint32_t byte() const { return static_cast<uint32_t>(byte_); }
  uint32_t line() const { return line_; }
  uint32_t col() const { return col_; }

 private:
  const std::string& text_;
  size_t byte_ = 0;
  uint32_t line_ = 0;
  uint32_t col_ = 0;
};

struct Override {
  uint32_t type;
  uint32_t modifiers;
};

// What the AST says about the name starting at each byte offset.
std::map<uint32_t, Override> ast_overrides(const Module& module) {
  std::map<uint32_t, Override> out;
  auto put = [&](const SourceRange& r, uint32_t type, uint32_t mods) {
    if (r.valid() && r.file == module.file) out[r.begin] = {type, mods};
  };
  for (const auto& d : module.decls) {
    uint32_t decl_type = (d->kind == DeclKind::Fn || d->kind == DeclKind::Model) ? Function : Variable;
    if (d->kind != DeclKind::Import) put(d->name_range, decl_type, Declaration);
    for (const auto& p : d->params) {
      put(p.name_range, Parameter, Declaration);
      put(p.type.range, TypeTok, 0);
    }
    for (const auto& f : d->schema) {
      put(f.name_range, Property, Declaration);
      put(f.type.range, TypeTok, 0);
    }
    if (d->declared_type) put(d->declared_type->range, TypeTok, 0);
    if (d->result_type) put(d->result_type->range, TypeTok, 0);
    for (const auto& e : d->entries) put(e.key_range, Property, 0);
    walk_exprs(*d, [&](const Expr& e) {
      switch (e.kind) {
        case ExprKind::Name: {
          const auto* n = e.as<NameExpr>();
          switch (n->target.kind) {
            case Binding::Param:
            case Binding::LambdaParam: put(e.range, Parameter, 0); break;
            case Binding::Builtin: put(e.range, Function, DefaultLibrary); break;
            case Binding::Global:
              if (n->target.decl && (n->target.decl->kind == DeclKind::Fn || n->target.decl->kind == DeclKind::Model))
                put(e.range, Function, 0);
              else put(e.range, Variable, 0);  // a const or dataset, even one named like a builtin
              break;
            case Binding::Local: put(e.range, Variable, 0); break;
            default: break;
          }
          break;
        }
        case ExprKind::Member: put(e.as<MemberExpr>()->member_range, Property, 0); break;
        case ExprKind::Lambda:
          for (const auto& r : e.as<LambdaExpr>()->param_ranges) put(r, Parameter, Declaration);
          break;
        case ExprKind::Block:
          for (const auto& s : e.as<BlockExpr>()->stmts) put(s.name_range, Variable, Declaration);
          break;
        case ExprKind::Record:
          for (const auto& f : e.as<RecordExpr>()->fields) put(f.name_range, Property, 0);
          break;
        case ExprKind::Call:
          for (const auto& a : e.as<CallExpr>()->args) put(a.name_range, Parameter, 0);
          break;
        default: break;
      }
    });
  }
  return out;
}

}  // namespace

const std::vector<std::string>& semantic_token_types() {
  static const std::vector<std::string> types = {"keyword",  "variable", "number", "string",    "comment",
                                                 "operator", "function", "type",   "parameter", "property"};
  return types;
}

const std::vector<std::string>& semantic_token_modifiers() {
  static const std::vector<std::string> mods = {"declaration", "defaultLibrary"};
  return mods;
}

std::vector<uint32_t> semantic_tokens(const std::string& text, const Module* module) {
  std::vector<uint32_t> data;
  static const std::set<std::string> builtin_names = [] {
    std::set<std::string> s;
    for (const Builtin& b : all_builtins()) s.insert(b.name);
    return s;
  }();
  std::map<uint32_t, Override> overrides;
  if (module) overrides = ast_overrides(*module);

  std::vector<std::unique_ptr<antlr4::Token>> tokens;
  ByteStream input(text);
  L lexer(&input);
  lexer.removeErrorListeners();
  try {
    for (;;) {
      std::unique_ptr<antlr4::Token> t = lexer.nextToken();
      bool eof = t->getType() == antlr4::Token::EOF;
      if (!eof && t->getType() != L::WS && t->getType() != L::NEWLINE) tokens.push_back(std::move(t));
      if (eof) break;
    }
  } catch (...) {
    return data;
  }

  Cursor cursor(text);
  uint32_t prev_line = 0, prev_col = 0;
  bool line_has_token = false;
  uint32_t current_line = UINT32_MAX;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const antlr4::Token* t = tokens[i].get();
    size_t type = t->getType();
    cursor.advance_to(t->getStartIndex());
    uint32_t line = cursor.line(), col = cursor.col(), byte = cursor.byte();
    if (line != current_line) {
      current_line = line;
      line_has_token = false;
    }
    bool first_on_line = !line_has_token && type != L::COMMENT;
    if (type != L::COMMENT) line_has_token = true;
    cursor.advance_to(t->getStopIndex() + 1);
    if (cursor.line() != line) continue;  // tokens never span lines; be safe
    uint32_t length = cursor.col() - col;
    if (length == 0) continue;

    int tok_type = -1;
    uint32_t mods = 0;
    if (type == L::COMMENT) {
      tok_type = Comment;
    } else if (type == L::STRING) {
      tok_type = String;
    } else if (type == L::INT || type == L::FLOAT) {
      tok_type = Number;
    } else if (type == L::TRUE || type == L::FALSE) {
      tok_type = Keyword;
    } else if (is_operator_token(type)) {
      tok_type = Operator;
    } else if (type == L::ID || is_keyword_token(type)) {
      // Declaration keywords are contextual: a keyword when it starts a line and a name or string follows.
      size_t next = i + 1 < tokens.size() ? tokens[i + 1]->getType() : 0;
      bool name_follows = next == L::ID || next == L::STRING || is_keyword_token(next);
      if (is_keyword_token(type) && first_on_line && name_follows) {
        tok_type = Keyword;
      } else {
        auto it = overrides.find(byte);
        std::string word = t->getText();
        if (it != overrides.end()) {
          tok_type = static_cast<int>(it->second.type);
          mods = it->second.modifiers;
        } else if (parse_dtype(word)) {
          tok_type = TypeTok;
        } else if (builtin_names.count(word)) {
          tok_type = Function;
          mods = DefaultLibrary;
        } else {
          tok_type = Variable;
        }
      }
    }
    if (tok_type < 0) continue;
    uint32_t delta_line = line - prev_line;
    uint32_t delta_col = delta_line == 0 ? col - prev_col : col;
    data.insert(data.end(), {delta_line, delta_col, length, static_cast<uint32_t>(tok_type), mods});
    prev_line = line;
    prev_col = col;
  }
  return data;
}

}  // namespace pipec::lsp

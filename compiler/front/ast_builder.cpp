// Builds the AST from the ANTLR parse tree. Each function names the grammar rule it handles.
#include "compiler/front/ast_builder.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "PipeParser.h"
#include "compiler/front/parser.h"

namespace pipec {

namespace {

using P = pipegen::PipeParser;

// Expression chains like `1+1+1+...` nest once per operator; past this the builder stops descending.
constexpr int kMaxBuildDepth = 4000;

class Builder {
 public:
  Builder(uint32_t file, const std::string& text, Diagnostics& diags) : file_(file), text_(text), diags_(diags) {}

  // program : item* EOF ;
  void program(P::ProgramContext* ctx, Module& out) {
    for (P::ItemContext* item : ctx->item()) {
      if (item->exception) continue;
      std::unique_ptr<Decl> d = decl(item);
      if (d) {
        attach_doc(*d, out);
        out.decls.push_back(std::move(d));
      }
    }
    // Declarations around an error of the lexer, parser or this builder are partial.
    for (const Diagnostic& diag : diags_.all()) {
      if (diag.range.file != file_ || !is_syntax_kind(diag.kind)) continue;
      for (auto& d : out.decls)
        if (diag.range.begin >= d->range.begin && diag.range.begin <= d->range.end) d->syntax_error = true;
    }
  }

  // expr, on its own (a `-D NAME=VALUE` value).
  ExprPtr standalone(P::ExprContext* ctx) { return expr(ctx); }

  static bool is_syntax_kind(DiagKind k) {
    return k == DiagKind::syntax_error || k == DiagKind::bad_character || k == DiagKind::unterminated_string ||
           k == DiagKind::invalid_number || k == DiagKind::nesting_too_deep;
  }

 private:
  SourceRange range(antlr4::ParserRuleContext* ctx) const {
    if (!ctx || !ctx->getStart()) return {file_, 0, 0};
    uint32_t b = static_cast<uint32_t>(ctx->getStart()->getStartIndex());
    auto* stop = ctx->getStop();
    uint32_t e = b;
    if (stop && stop->getType() != antlr4::Token::EOF && stop->getStopIndex() + 1 >= b)
      e = static_cast<uint32_t>(stop->getStopIndex() + 1);
    return {file_, b, e};
  }
  SourceRange range(antlr4::tree::TerminalNode* node) const {
    if (!node) return {file_, 0, 0};
    auto* t = node->getSymbol();
    return {file_, static_cast<uint32_t>(t->getStartIndex()), static_cast<uint32_t>(t->getStopIndex() + 1)};
  }
  SourceRange range(antlr4::Token* t) const {
    if (!t) return {file_, 0, 0};
    return {file_, static_cast<uint32_t>(t->getStartIndex()), static_cast<uint32_t>(t->getStopIndex() + 1)};
  }
  static SourceRange join(SourceRange a, SourceRange b) { return {a.file, a.begin, std::max(a.end, b.end)}; }

  // Doc comments: the run of own-line comments that ends on the line just above the declaration.
  void attach_doc(Decl& d, const Module& m) {
    uint32_t cursor = d.range.begin;
    std::vector<std::string> lines;
    for (auto it = m.comments.rbegin(); it != m.comments.rend(); ++it) {
      const Comment& c = *it;
      if (c.range.end > cursor) continue;
      if (!c.own_line) break;
      // Only whitespace and at most one line break between the comment and what follows it.
      int newlines = 0;
      bool only_space = true;
      for (uint32_t i = c.range.end; i < cursor; ++i) {
        if (text_[i] == '\n') ++newlines;
        else if (text_[i] != ' ' && text_[i] != '\t' && text_[i] != '\r') only_space = false;
      }
      if (!only_space || newlines != 1) break;
      std::string t = c.text.substr(1);
      if (!t.empty() && t[0] == ' ') t.erase(0, 1);
      lines.push_back(t);  // collected bottom-up; reversed below (inserting at the front is quadratic)
      cursor = c.range.begin;
    }
    std::reverse(lines.begin(), lines.end());
    for (size_t i = 0; i < lines.size(); ++i) d.doc += (i ? "\n" : "") + lines[i];
  }

  // name : ID | IMPORT | CONST | FN | SOURCE | PIPELINE | MODEL | TRAIN ;
  static std::string name(P::NameContext* ctx) { return ctx ? ctx->getText() : std::string(); }

  std::unique_ptr<Decl> decl(P::ItemContext* item) {
    auto d = std::make_unique<Decl>();
    d->range = range(item);
    if (auto* c = item->importDecl()) {
      // importDecl : IMPORT (STRING | name) ;
      d->kind = DeclKind::Import;
      if (c->STRING()) {
        d->import_path = unescape(c->STRING()->getText());
        d->name_range = range(c->STRING());
      } else if (c->name()) {
        d->import_path = name(c->name());
        d->import_is_module = true;
        d->name_range = range(c->name());
      } else {
        return nullptr;
      }
    } else if (auto* c = item->constDecl()) {
      // constDecl : CONST name (COLON type)? ASSIGN expr ;
      d->kind = DeclKind::Const;
      set_name(*d, c->name());
      if (c->type()) d->declared_type = type(c->type());
      d->value = expr(c->expr());
    } else if (auto* c = item->fnDecl()) {
      // fnDecl : FN name LPAREN paramList? RPAREN (ARROW type)? (ASSIGN expr | block) ;
      d->kind = DeclKind::Fn;
      set_name(*d, c->name());
      if (c->paramList()) params(c->paramList(), d->params);
      if (c->type()) d->result_type = type(c->type());
      d->value = c->block() ? block(c->block()) : expr(c->expr());
    } else if (auto* c = item->sourceDecl()) {
      // sourceDecl : SOURCE name ASSIGN expr schema? ;
      d->kind = DeclKind::Source;
      set_name(*d, c->name());
      d->value = expr(c->expr());
      if (auto* s = c->schema()) {
        // schema : LBRACE (schemaField (COMMA | SEMI)?)* RBRACE ;
        d->has_schema = true;
        for (auto* f : s->schemaField()) {
          // schemaField : name COLON type (ASSIGN expr)? ;
          SchemaField sf;
          sf.name = name(f->name());
          sf.name_range = range(f->name());
          if (f->type()) sf.type = type(f->type());
          if (f->expr()) sf.default_value = expr(f->expr());
          sf.range = range(f);
          d->schema.push_back(std::move(sf));
        }
      }
    } else if (auto* c = item->pipelineDecl()) {
      // pipelineDecl : PIPELINE name ASSIGN expr ;
      d->kind = DeclKind::Pipeline;
      set_name(*d, c->name());
      d->value = expr(c->expr());
    } else if (auto* c = item->modelDecl()) {
      // modelDecl : MODEL name LPAREN paramList? RPAREN (ARROW type)? block ;
      d->kind = DeclKind::Model;
      set_name(*d, c->name());
      if (c->paramList()) params(c->paramList(), d->params);
      if (c->type()) d->result_type = type(c->type());
      d->value = block(c->block());
    } else if (auto* c = item->trainDecl()) {
      // trainDecl : TRAIN name ASSIGN LBRACE (trainEntry (COMMA | SEMI)?)* RBRACE ;
      d->kind = DeclKind::Train;
      set_name(*d, c->name());
      for (auto* e : c->trainEntry()) {
        TrainEntry te;
        te.key = name(e->name());
        te.key_range = range(e->name());
        te.value = expr(e->expr());
        d->entries.push_back(std::move(te));
      }
    } else {
      return nullptr;
    }
    return d;
  }

  void set_name(Decl& d, P::NameContext* n) {
    d.name = name(n);
    d.name_range = range(n);
  }

  // paramList : param (COMMA param)* COMMA? ;   param : name COLON type ;
  void params(P::ParamListContext* ctx, std::vector<Param>& out) {
    for (auto* p : ctx->param()) {
      Param param;
      param.name = name(p->name());
      param.name_range = range(p->name());
      if (p->type()) param.type = type(p->type());
      out.push_back(std::move(param));
    }
  }

  // type : name (LBRACK dim (COMMA dim)* RBRACK)? ;   dim : INT | QUESTION | name ;
  TypeSyntax type(P::TypeContext* ctx) {
    TypeSyntax t;
    t.name = name(ctx->name());
    t.range = range(ctx);
    t.has_dims = ctx->LBRACK() != nullptr;
    for (auto* d : ctx->dim()) {
      DimSyntax dim;
      dim.range = range(d);
      if (d->INT()) {
        dim.kind = DimSyntax::Known;
        dim.value = parse_int(d->INT()->getText(), dim.range).value_or(0);
      } else if (d->QUESTION()) {
        dim.kind = DimSyntax::Unknown;
      } else {
        dim.kind = DimSyntax::Named;
        dim.name = name(d->name());
      }
      t.dims.push_back(std::move(dim));
    }
    return t;
  }

  // block : LBRACE (stmt SEMI?)* expr SEMI? RBRACE ;   stmt : name ASSIGN expr ;
  ExprPtr block(P::BlockContext* ctx) {
    if (!ctx) return error_expr(SourceRange{file_, 0, 0});
    auto b = std::make_unique<BlockExpr>();
    b->range = range(ctx);
    for (auto* s : ctx->stmt()) {
      Stmt st;
      st.name = name(s->name());
      st.name_range = range(s->name());
      st.value = expr(s->expr());
      st.range = range(s);
      b->stmts.push_back(std::move(st));
    }
    b->result = expr(ctx->expr());
    return b;
  }

  // A placeholder for a subtree ANTLR could not build; sema ignores it (its error is already reported).
  ExprPtr error_expr(SourceRange r) {
    auto e = std::make_unique<NameExpr>();
    e->name = "<error>";
    e->range = r;
    return e;
  }

  ExprPtr expr(P::ExprContext* ctx) {
    if (!ctx) return error_expr(SourceRange{file_, 0, 0});
    if (++depth_ > kMaxBuildDepth) {
      --depth_;
      if (!too_deep_reported_) {
        too_deep_reported_ = true;
        diags_.report(DiagKind::nesting_too_deep, range(ctx),
                      "expression nests more than " + std::to_string(kMaxBuildDepth) + " operators deep");
      }
      return error_expr(range(ctx));
    }
    ExprPtr e = expr_inner(ctx);
    --depth_;
    if (e->range.file == 0 || e->range.end == 0) e->range = range(ctx);
    return e;
  }

  ExprPtr binary(BinaryOp op, P::ExprContext* l, P::ExprContext* r, antlr4::Token* op_tok, P::ExprContext* whole) {
    auto b = std::make_unique<BinaryExpr>();
    b->op = op;
    b->lhs = expr(l);
    b->rhs = expr(r);
    b->op_range = range(op_tok);
    b->range = range(whole);
    return b;
  }

  ExprPtr expr_inner(P::ExprContext* ctx) {
    // expr LPAREN argList? RPAREN  # callExpr
    if (auto* c = dynamic_cast<P::CallExprContext*>(ctx)) {
      auto call = std::make_unique<CallExpr>();
      call->callee = expr(c->expr());
      call->args_range = join(range(c->LPAREN()), range(c->RPAREN()));
      if (auto* al = c->argList()) {
        // argList : arg (COMMA arg)* COMMA? ;   arg : (name ASSIGN)? expr ;
        for (auto* a : al->arg()) {
          Arg arg;
          if (a->name()) {
            arg.name = name(a->name());
            arg.name_range = range(a->name());
          }
          arg.value = expr(a->expr());
          call->args.push_back(std::move(arg));
        }
      }
      call->range = range(c);
      return call;
    }
    // expr LBRACK index (COMMA index)* COMMA? RBRACK  # indexExpr
    if (auto* c = dynamic_cast<P::IndexExprContext*>(ctx)) {
      auto ix = std::make_unique<IndexExpr>();
      ix->base = expr(c->expr());
      for (auto* i : c->index()) ix->items.push_back(index(i));
      ix->range = range(c);
      return ix;
    }
    // expr DOT name  # memberExpr
    if (auto* c = dynamic_cast<P::MemberExprContext*>(ctx)) {
      auto m = std::make_unique<MemberExpr>();
      m->base = expr(c->expr());
      m->member = name(c->name());
      m->member_range = range(c->name());
      m->range = range(c);
      return m;
    }
    // <assoc = right> expr POW expr  # powExpr
    if (auto* c = dynamic_cast<P::PowExprContext*>(ctx))
      return binary(BinaryOp::Pow, c->expr(0), c->expr(1), c->POW()->getSymbol(), c);
    // op=(MINUS | BANG | TILDE | PLUS) expr  # unaryExpr
    if (auto* c = dynamic_cast<P::UnaryExprContext*>(ctx)) {
      auto u = std::make_unique<UnaryExpr>();
      switch (c->op->getType()) {
        case P::MINUS: u->op = UnaryOp::Neg; break;
        case P::PLUS: u->op = UnaryOp::Plus; break;
        case P::BANG: u->op = UnaryOp::Not; break;
        default: u->op = UnaryOp::BitNot; break;
      }
      u->operand = expr(c->expr());
      u->range = range(c);
      return u;
    }
    // expr op=(STAR | SLASH | SLASHSLASH | PERCENT) expr  # mulExpr
    if (auto* c = dynamic_cast<P::MulExprContext*>(ctx)) {
      BinaryOp op = c->op->getType() == P::STAR         ? BinaryOp::Mul
                    : c->op->getType() == P::SLASH      ? BinaryOp::Div
                    : c->op->getType() == P::SLASHSLASH ? BinaryOp::FloorDiv
                                                        : BinaryOp::Mod;
      return binary(op, c->expr(0), c->expr(1), c->op, c);
    }
    // expr op=(PLUS | MINUS) expr  # addExpr
    if (auto* c = dynamic_cast<P::AddExprContext*>(ctx))
      return binary(c->op->getType() == P::PLUS ? BinaryOp::Add : BinaryOp::Sub, c->expr(0), c->expr(1), c->op, c);
    // expr op=(SHL | SHR) expr  # shiftExpr
    if (auto* c = dynamic_cast<P::ShiftExprContext*>(ctx))
      return binary(c->op->getType() == P::SHL ? BinaryOp::Shl : BinaryOp::Shr, c->expr(0), c->expr(1), c->op, c);
    // expr op=(AMP | CARET) expr  # bitExpr
    if (auto* c = dynamic_cast<P::BitExprContext*>(ctx))
      return binary(c->op->getType() == P::AMP ? BinaryOp::BitAnd : BinaryOp::BitXor, c->expr(0), c->expr(1), c->op, c);
    // expr op=(EQ | NE | LT | LE | GT | GE) expr  # compareExpr
    if (auto* c = dynamic_cast<P::CompareExprContext*>(ctx)) {
      BinaryOp op;
      switch (c->op->getType()) {
        case P::EQ: op = BinaryOp::Eq; break;
        case P::NE: op = BinaryOp::Ne; break;
        case P::LT: op = BinaryOp::Lt; break;
        case P::LE: op = BinaryOp::Le; break;
        case P::GT: op = BinaryOp::Gt; break;
        default: op = BinaryOp::Ge; break;
      }
      return binary(op, c->expr(0), c->expr(1), c->op, c);
    }
    // expr ANDAND expr  # andExpr
    if (auto* c = dynamic_cast<P::AndExprContext*>(ctx))
      return binary(BinaryOp::And, c->expr(0), c->expr(1), c->ANDAND()->getSymbol(), c);
    // expr OROR expr  # orExpr
    if (auto* c = dynamic_cast<P::OrExprContext*>(ctx))
      return binary(BinaryOp::Or, c->expr(0), c->expr(1), c->OROR()->getSymbol(), c);
    // expr PIPE expr  # pipeExpr
    if (auto* c = dynamic_cast<P::PipeExprContext*>(ctx)) {
      auto p = std::make_unique<PipeExpr>();
      p->lhs = expr(c->expr(0));
      p->rhs = expr(c->expr(1));
      p->range = range(c);
      return p;
    }
    // lambdaParams FATARROW (block | expr)  # lambdaExpr
    if (auto* c = dynamic_cast<P::LambdaExprContext*>(ctx)) {
      auto l = std::make_unique<LambdaExpr>();
      // lambdaParams : name | LPAREN (name (COMMA name)*)? RPAREN ;
      auto* ps = c->lambdaParams();
      l->parenthesized = ps->LPAREN() != nullptr;
      for (auto* n : ps->name()) {
        l->params.push_back(name(n));
        l->param_ranges.push_back(range(n));
      }
      l->body = c->block() ? block(c->block()) : expr(c->expr());
      l->range = range(c);
      return l;
    }
    // primary  # primaryExpr
    if (auto* c = dynamic_cast<P::PrimaryExprContext*>(ctx)) return primary(c->primary());
    return error_expr(range(ctx));
  }

  // index : ELLIPSIS | start=expr? COLON stop=expr? (COLON step=expr?)? | expr ;
  IndexItem index(P::IndexContext* ctx) {
    IndexItem item;
    item.range = range(ctx);
    if (dynamic_cast<P::EllipsisIndexContext*>(ctx)) {
      item.kind = IndexItem::Ellipsis;
    } else if (auto* s = dynamic_cast<P::SliceIndexContext*>(ctx)) {
      item.kind = IndexItem::Slice;
      if (s->start) item.start = expr(s->start);
      if (s->stop) item.stop = expr(s->stop);
      if (s->step) item.step = expr(s->step);
    } else if (auto* e = dynamic_cast<P::ExprIndexContext*>(ctx)) {
      item.kind = IndexItem::Single;
      item.value = expr(e->expr());
    } else {
      item.value = error_expr(item.range);
    }
    return item;
  }

  ExprPtr primary(P::PrimaryContext* ctx) {
    if (!ctx) return error_expr({file_, 0, 0});
    SourceRange r = range(ctx);
    // INT  # intLiteral
    if (auto* c = dynamic_cast<P::IntLiteralContext*>(ctx)) {
      auto e = std::make_unique<IntLitExpr>();
      e->spelling = c->getText();
      e->value = parse_int(e->spelling, r).value_or(0);
      e->range = r;
      return e;
    }
    // FLOAT  # floatLiteral
    if (auto* c = dynamic_cast<P::FloatLiteralContext*>(ctx)) {
      auto e = std::make_unique<FloatLitExpr>();
      e->spelling = c->getText();
      std::string digits;
      for (char ch : e->spelling)
        if (ch != '_') digits += ch;
      errno = 0;
      e->value = std::strtod(digits.c_str(), nullptr);
      if (errno == ERANGE && (e->value > 1 || e->value < -1))
        diags_.report(DiagKind::invalid_number, r, "number `" + e->spelling + "` is too large for f64");
      e->range = r;
      return e;
    }
    // STRING  # stringLiteral
    if (auto* c = dynamic_cast<P::StringLiteralContext*>(ctx)) {
      auto e = std::make_unique<StringLitExpr>();
      e->spelling = c->getText();
      e->value = unescape(e->spelling);
      e->range = r;
      return e;
    }
    // (TRUE | FALSE)  # boolLiteral
    if (auto* c = dynamic_cast<P::BoolLiteralContext*>(ctx)) {
      auto e = std::make_unique<BoolLitExpr>();
      e->value = c->TRUE() != nullptr;
      e->range = r;
      return e;
    }
    // LBRACK (expr (COMMA expr)* COMMA?)? RBRACK  # listLiteral
    if (auto* c = dynamic_cast<P::ListLiteralContext*>(ctx)) {
      auto e = std::make_unique<ListExpr>();
      for (auto* x : c->expr()) e->items.push_back(expr(x));
      e->range = r;
      return e;
    }
    // LBRACE recordField (COMMA recordField)* COMMA? RBRACE  # recordLiteral
    if (auto* c = dynamic_cast<P::RecordLiteralContext*>(ctx)) {
      auto e = std::make_unique<RecordExpr>();
      // recordField : name (COLON expr)? ;
      for (auto* f : c->recordField()) {
        RecordFieldSyntax rf;
        rf.name = name(f->name());
        rf.name_range = range(f->name());
        if (f->expr()) rf.value = expr(f->expr());
        e->fields.push_back(std::move(rf));
      }
      e->range = r;
      return e;
    }
    // block  # blockExpr
    if (auto* c = dynamic_cast<P::BlockExprContext*>(ctx)) return block(c->block());
    // LPAREN expr RPAREN  # parenExpr
    if (auto* c = dynamic_cast<P::ParenExprContext*>(ctx)) {
      ExprPtr inner = expr(c->expr());
      if (inner->kind == ExprKind::Binary) inner->as<BinaryExpr>()->parenthesized = true;
      return inner;
    }
    // name  # nameRef
    if (auto* c = dynamic_cast<P::NameRefContext*>(ctx)) {
      auto e = std::make_unique<NameExpr>();
      e->name = name(c->name());
      e->range = r;
      return e;
    }
    return error_expr(r);
  }

  std::optional<int64_t> parse_int(const std::string& spelling, SourceRange r) {
    std::string digits;
    int base = 10;
    size_t i = 0;
    if (spelling.size() > 1 && spelling[0] == '0' && (spelling[1] == 'x' || spelling[1] == 'b')) {
      base = spelling[1] == 'x' ? 16 : 2;
      i = 2;
    }
    for (; i < spelling.size(); ++i)
      if (spelling[i] != '_') digits += spelling[i];
    if (digits.empty()) {
      diags_.report(DiagKind::invalid_number, r, "number `" + spelling + "` has no digits");
      return std::nullopt;
    }
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(digits.c_str(), &end, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) {
      diags_.report(DiagKind::invalid_number, r, "integer `" + spelling + "` does not fit in i64");
      return std::nullopt;
    }
    return static_cast<int64_t>(v);
  }

  static std::string unescape(const std::string& quoted) {
    std::string out;
    if (quoted.size() < 2) return out;
    for (size_t i = 1; i + 1 < quoted.size(); ++i) {
      char c = quoted[i];
      if (c == '\\' && i + 2 < quoted.size()) {
        char n = quoted[++i];
        switch (n) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case '0': out += '\0'; break;
          default: out += n; break;
        }
      } else {
        out += c;
      }
    }
    return out;
  }

  uint32_t file_;
  const std::string& text_;
  Diagnostics& diags_;
  int depth_ = 0;
  bool too_deep_reported_ = false;
};

}  // namespace

void build_ast(antlr4::ParserRuleContext* program, uint32_t file, const std::string& text, Diagnostics& diags,
               Module& out) {
  Builder b(file, text, diags);
  b.program(static_cast<P::ProgramContext*>(program), out);
}

ExprPtr build_expression(antlr4::ParserRuleContext* expr, uint32_t file, const std::string& text, Diagnostics& diags) {
  size_t errors = diags.error_count();
  Builder b(file, text, diags);
  ExprPtr e = b.standalone(static_cast<P::ExprContext*>(expr));
  return diags.error_count() == errors ? std::move(e) : nullptr;
}

}  // namespace pipec

// The formatter works in two passes.
//
// 1. Layout: the AST is printed into lines (indentation, text, and the source offsets of the tokens the
//    line holds). Comments play no part here except one: a construct with a comment in one of the gaps
//    where it could break (between call arguments, pipe stages, list items, ...) is printed broken, so
//    that the comment keeps its place.
// 2. Comments and blank lines: walking the lines in order, every comment that starts before a line's
//    first token is emitted before it (own-line comments) or at the end of the line before (trailing
//    comments). Blank lines the user wrote between statements or declarations are kept, at most one.
//
// Idempotence rests on the decisions of pass 1 depending only on the AST and on which gaps hold comments,
// and on pass 2 putting each comment at the first line break after it, which lies in the same gap.
#include "compiler/fmt/formatter.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pipec {

namespace {

constexpr uint32_t kNoPos = UINT32_MAX;

// What may precede a line: nothing, one blank line if the user had one, or always one blank line.
enum class Blank { Drop, Keep, Force };

struct Line {
  int indent = 0;
  int comment_indent = 0;  // where own-line comments flushed before this line go
  Blank blank = Blank::Drop;
  std::string text;
  uint32_t src_begin = kNoPos;  // offset of the first token on the line
  uint32_t src_end = 0;         // one past the last token on the line
};

// A piece of an expression's one-line form: literal text or a child expression.
struct Piece {
  std::string text;
  const Expr* child = nullptr;
  bool parens = false;
};

// Binding strength of a whole expression, on binary_op_precedence's scale.
constexpr int kUnaryPrec = 9;  // tighter than `*`, looser than `**`
constexpr int kPipePrec = 1;
constexpr int kLambdaPrec = 0;
constexpr int kPostfixPrec = 100;

int expr_prec(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Binary: return binary_op_precedence(e.as<BinaryExpr>()->op);
    case ExprKind::Unary: return kUnaryPrec;
    case ExprKind::Pipe: return kPipePrec;
    case ExprKind::Lambda: return kLambdaPrec;
    default: return kPostfixPrec;
  }
}

// A comparison written in parentheses as an operand of another keeps them: `(a < b) == c` compares a
// bool, while `a < b == c` is a chain the checker refuses (and stays one, so the error is not hidden).
bool parenthesized_comparison(const Expr& e) {
  return e.kind == ExprKind::Binary && is_comparison(e.as<BinaryExpr>()->op) && e.as<BinaryExpr>()->parenthesized;
}

bool binary_operand_parens(const Expr& child, BinaryOp op, bool rhs) {
  if (child.kind == ExprKind::Pipe || child.kind == ExprKind::Lambda) return true;
  if (is_comparison(op) && parenthesized_comparison(child)) return true;
  int cp = expr_prec(child);
  int p = binary_op_precedence(op);
  if (cp != p) return cp < p;
  bool right_assoc = op == BinaryOp::Pow;
  return rhs ? !right_assoc : right_assoc;
}

// The base of a call, index or member access.
bool postfix_base_parens(const Expr& e) {
  return e.kind == ExprKind::Unary || e.kind == ExprKind::Binary || e.kind == ExprKind::Pipe ||
         e.kind == ExprKind::Lambda;
}

// `-(x ** 2)` keeps its parentheses although `-x ** 2` means the same: few readers know that.
bool unary_operand_parens(const Expr& e) {
  return e.kind == ExprKind::Binary || e.kind == ExprKind::Pipe || e.kind == ExprKind::Lambda;
}

bool pipe_lhs_parens(const Expr& e) { return e.kind == ExprKind::Lambda; }
bool pipe_rhs_parens(const Expr& e) { return e.kind == ExprKind::Pipe || e.kind == ExprKind::Lambda; }

// `r => { a }` is a lambda returning `a` from a block; the record `{ a }` needs parentheses there.
bool lambda_body_parens(const Expr& body) {
  if (body.kind != ExprKind::Record) return false;
  const auto* r = body.as<RecordExpr>();
  return r->fields.size() == 1 && !r->fields[0].value;
}

std::string_view rstrip(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\f'))
    s.remove_suffix(1);
  return s;
}

class Formatter {
 public:
  Formatter(const Module& m, const SourceFile& file) : module_(m), src_(file.text()), comments_(m.comments) {}

  std::string run() {
    const Decl* prev = nullptr;
    bool prev_multi = false;
    for (const auto& d : module_.decls) {
      size_t first = lines_.size();
      decl(*d);
      bool multi = lines_.size() - first > 1;
      if (prev && (multi || prev_multi || d->kind != prev->kind)) lines_[first].blank = Blank::Force;
      prev = d.get();
      prev_multi = multi;
    }
    return assemble();
  }

 private:
  // ----------------------------------------------------------------------------------------------------
  // Lines

  void newline(int indent, Blank blank, int comment_indent = -1) {
    Line l;
    l.indent = indent;
    l.comment_indent = comment_indent < 0 ? indent : comment_indent;
    l.blank = blank;
    lines_.push_back(std::move(l));
  }
  void put(std::string_view s) { lines_.back().text.append(s); }
  void mark(uint32_t begin, uint32_t end) {
    if (begin == kNoPos) return;
    Line& l = lines_.back();
    l.src_begin = std::min(l.src_begin, begin);
    l.src_end = std::max(l.src_end, end);
  }
  void mark(SourceRange r) {
    if (r.valid()) mark(r.begin, r.end);
  }
  void mark_at(uint32_t pos) {
    if (pos != kNoPos) mark(pos, pos + 1);
  }
  size_t col() const { return static_cast<size_t>(lines_.back().indent) + lines_.back().text.size(); }
  bool fits(size_t len) const { return col() + len <= static_cast<size_t>(kFmtWidth); }

  // ----------------------------------------------------------------------------------------------------
  // Source helpers

  std::string_view text_of(SourceRange r) const {
    if (r.end > src_.size() || r.begin > r.end) return {};
    return std::string_view(src_).substr(r.begin, r.end - r.begin);
  }

  // Whether a comment starts in [begin, end).
  bool has_comment(uint32_t begin, uint32_t end) const {
    if (begin >= end) return false;
    auto it = std::lower_bound(comments_.begin(), comments_.end(), begin,
                               [](const Comment& c, uint32_t pos) { return c.range.begin < pos; });
    return it != comments_.end() && it->range.begin < end;
  }

  // The offset of punctuation `want` at or after `pos`, skipping whitespace, comments and any of `skip`;
  // kNoPos when something else comes first.
  uint32_t find_punct(uint32_t pos, char want, std::string_view skip = {}) const {
    while (pos < src_.size()) {
      char c = src_[pos];
      if (c == want) return pos;
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || skip.find(c) != std::string_view::npos) {
        ++pos;
      } else if (c == '#') {
        while (pos < src_.size() && src_[pos] != '\n') ++pos;
      } else {
        return kNoPos;
      }
    }
    return kNoPos;
  }

  // Whether [begin, end) holds an empty line (two line breaks with only blanks between them).
  bool has_blank_line(uint32_t begin, uint32_t end) const {
    int newlines = 0;
    for (uint32_t i = begin; i < end && i < src_.size(); ++i) {
      char c = src_[i];
      if (c == '\n') {
        if (++newlines >= 2) return true;
      } else if (c != ' ' && c != '\t' && c != '\r' && c != '\f') {
        newlines = 0;
      }
    }
    return false;
  }

  // ----------------------------------------------------------------------------------------------------
  // One-line forms

  static uint32_t arg_begin(const Arg& a) { return a.name.empty() ? a.value->range.begin : a.name_range.begin; }
  static uint32_t field_begin(const RecordFieldSyntax& f) { return f.name_range.begin; }
  static uint32_t field_end(const RecordFieldSyntax& f) { return f.value ? f.value->range.end : f.name_range.end; }

  // Comments between `(`/`[`/`{` and the first element, between elements, or before the closer.
  template <class Seq, class Begin, class End>
  bool gap_comments(uint32_t open_end, uint32_t close, const Seq& items, Begin begin_of, End end_of) const {
    uint32_t pos = open_end;
    for (const auto& it : items) {
      if (has_comment(pos, begin_of(it))) return true;
      pos = end_of(it);
    }
    return has_comment(pos, close);
  }

  bool call_gaps(const CallExpr& c) const {
    return gap_comments(c.args_range.begin + 1, c.args_range.end - 1, c.args, arg_begin,
                        [](const Arg& a) { return a.value->range.end; });
  }
  bool list_gaps(const ListExpr& l) const {
    return gap_comments(
        l.range.begin + 1, l.range.end - 1, l.items, [](const ExprPtr& e) { return e->range.begin; },
        [](const ExprPtr& e) { return e->range.end; });
  }
  bool record_gaps(const RecordExpr& r) const {
    return gap_comments(r.range.begin + 1, r.range.end - 1, r.fields, field_begin, field_end);
  }

  static std::string lambda_params(const LambdaExpr& l) {
    if (!l.parenthesized && l.params.size() == 1) return l.params[0];
    std::string s = "(";
    for (size_t i = 0; i < l.params.size(); ++i) s += (i ? ", " : "") + l.params[i];
    return s + ")";
  }

  static void piece(std::vector<Piece>& out, std::string text) {
    out.push_back(Piece{std::move(text), nullptr, false});
  }
  static void piece(std::vector<Piece>& out, const Expr& e, bool parens) { out.push_back(Piece{{}, &e, parens}); }

  // The pieces of e's one-line form; false when e has none of its own (a block, or a comment that needs a
  // line break). Children are checked separately.
  bool flat_pieces(const Expr& e, std::vector<Piece>& out) const {
    switch (e.kind) {
      case ExprKind::IntLit: piece(out, e.as<IntLitExpr>()->spelling); return true;
      case ExprKind::FloatLit: piece(out, e.as<FloatLitExpr>()->spelling); return true;
      case ExprKind::StringLit: piece(out, e.as<StringLitExpr>()->spelling); return true;
      case ExprKind::BoolLit: piece(out, e.as<BoolLitExpr>()->value ? "true" : "false"); return true;
      case ExprKind::Name: piece(out, e.as<NameExpr>()->name); return true;
      case ExprKind::Block: return false;
      case ExprKind::List: {
        const auto* l = e.as<ListExpr>();
        if (list_gaps(*l)) return false;
        piece(out, "[");
        for (size_t i = 0; i < l->items.size(); ++i) {
          if (i) piece(out, ", ");
          piece(out, *l->items[i], false);
        }
        piece(out, "]");
        return true;
      }
      case ExprKind::Record: {
        const auto* r = e.as<RecordExpr>();
        if (record_gaps(*r)) return false;
        piece(out, "{ ");
        for (size_t i = 0; i < r->fields.size(); ++i) {
          const auto& f = r->fields[i];
          piece(out, (i ? ", " : "") + f.name + (f.value ? ": " : ""));
          if (f.value) piece(out, *f.value, false);
        }
        piece(out, " }");
        return true;
      }
      case ExprKind::Call: {
        const auto* c = e.as<CallExpr>();
        if (call_gaps(*c)) return false;
        piece(out, *c->callee, postfix_base_parens(*c->callee));
        piece(out, "(");
        for (size_t i = 0; i < c->args.size(); ++i) {
          const Arg& a = c->args[i];
          if (i || !a.name.empty()) piece(out, (i ? ", " : "") + (a.name.empty() ? "" : a.name + " = "));
          piece(out, *a.value, false);
        }
        piece(out, ")");
        return true;
      }
      case ExprKind::Index: {
        const auto* ix = e.as<IndexExpr>();
        piece(out, *ix->base, postfix_base_parens(*ix->base));
        piece(out, "[");
        for (size_t i = 0; i < ix->items.size(); ++i) {
          const IndexItem& it = ix->items[i];
          if (i) piece(out, ", ");
          switch (it.kind) {
            case IndexItem::Single: piece(out, *it.value, false); break;
            case IndexItem::Ellipsis: piece(out, "..."); break;
            case IndexItem::Slice:
              if (it.start) piece(out, *it.start, false);
              piece(out, ":");
              if (it.stop) piece(out, *it.stop, false);
              if (it.step) {
                piece(out, ":");
                piece(out, *it.step, false);
              }
              break;
          }
        }
        piece(out, "]");
        return true;
      }
      case ExprKind::Member: {
        const auto* m = e.as<MemberExpr>();
        piece(out, *m->base, postfix_base_parens(*m->base));
        piece(out, "." + m->member);
        return true;
      }
      case ExprKind::Unary: {
        const auto* u = e.as<UnaryExpr>();
        piece(out, unary_op_spelling(u->op));
        piece(out, *u->operand, unary_operand_parens(*u->operand));
        return true;
      }
      case ExprKind::Binary: {
        const auto* b = e.as<BinaryExpr>();
        piece(out, *b->lhs, binary_operand_parens(*b->lhs, b->op, false));
        piece(out, std::string(" ") + binary_op_spelling(b->op) + " ");
        piece(out, *b->rhs, binary_operand_parens(*b->rhs, b->op, true));
        return true;
      }
      case ExprKind::Pipe: {
        const auto* p = e.as<PipeExpr>();
        piece(out, *p->lhs, pipe_lhs_parens(*p->lhs));
        piece(out, " | ");
        piece(out, *p->rhs, pipe_rhs_parens(*p->rhs));
        return true;
      }
      case ExprKind::Lambda: {
        const auto* l = e.as<LambdaExpr>();
        if (l->body->kind == ExprKind::Block) return false;
        piece(out, lambda_params(*l) + " => ");
        piece(out, *l->body, lambda_body_parens(*l->body));
        return true;
      }
    }
    return false;
  }

  // The length of e's one-line form, or nullopt when it has none.
  std::optional<size_t> flat_len(const Expr& e) {
    auto it = flat_memo_.find(&e);
    if (it != flat_memo_.end()) return it->second;
    std::vector<Piece> ps;
    std::optional<size_t> result;
    if (flat_pieces(e, ps)) {
      size_t n = 0;
      bool ok = true;
      for (const Piece& p : ps) {
        if (!p.child) {
          n += p.text.size();
          continue;
        }
        std::optional<size_t> c = flat_len(*p.child);
        if (!c) {
          ok = false;
          break;
        }
        n += *c + (p.parens ? 2 : 0);
      }
      if (ok) result = n;
    }
    flat_memo_.emplace(&e, result);
    return result;
  }

  void write_flat(const Expr& e, std::string& out) const {
    std::vector<Piece> ps;
    flat_pieces(e, ps);
    for (const Piece& p : ps) {
      if (!p.child) {
        out += p.text;
        continue;
      }
      if (p.parens) out += '(';
      write_flat(*p.child, out);
      if (p.parens) out += ')';
    }
  }

  void put_flat(const Expr& e) {
    std::string s;
    write_flat(e, s);
    put(s);
    mark(e.range);
  }

  // Simple enough to pack several to a line in a long list.
  static bool is_atom(const Expr& e) {
    switch (e.kind) {
      case ExprKind::IntLit:
      case ExprKind::FloatLit:
      case ExprKind::StringLit:
      case ExprKind::BoolLit:
      case ExprKind::Name: return true;
      case ExprKind::Unary: return is_atom(*e.as<UnaryExpr>()->operand);
      default: return false;
    }
  }

  // The first character e prints, to know whether it could continue the statement before it.
  static char lead_char(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Binary: {
        const auto* b = e.as<BinaryExpr>();
        return binary_operand_parens(*b->lhs, b->op, false) ? '(' : lead_char(*b->lhs);
      }
      case ExprKind::Pipe: {
        const auto* p = e.as<PipeExpr>();
        return pipe_lhs_parens(*p->lhs) ? '(' : lead_char(*p->lhs);
      }
      case ExprKind::Call: {
        const auto* c = e.as<CallExpr>();
        return postfix_base_parens(*c->callee) ? '(' : lead_char(*c->callee);
      }
      case ExprKind::Index: {
        const auto* ix = e.as<IndexExpr>();
        return postfix_base_parens(*ix->base) ? '(' : lead_char(*ix->base);
      }
      case ExprKind::Member: {
        const auto* m = e.as<MemberExpr>();
        return postfix_base_parens(*m->base) ? '(' : lead_char(*m->base);
      }
      case ExprKind::Unary: return unary_op_spelling(e.as<UnaryExpr>()->op)[0];
      case ExprKind::List: return '[';
      case ExprKind::Record:
      case ExprKind::Block: return '{';
      case ExprKind::Lambda: {
        const auto* l = e.as<LambdaExpr>();
        return l->parenthesized || l->params.size() != 1 ? '(' : 'a';
      }
      case ExprKind::StringLit: return '"';
      case ExprKind::IntLit:
      case ExprKind::FloatLit: return '0';
      default: return 'a';
    }
  }

  // Whether a statement printed after another could be read as continuing it (`x = a` then `(b)`).
  static bool continues_previous(const Expr& e) {
    char c = lead_char(e);
    return c == '(' || c == '[' || c == '-' || c == '+';
  }

  // ----------------------------------------------------------------------------------------------------
  // Expressions. `ind` is the indentation of the current line's content: a block opened on this line
  // indents its statements by ind + 2 and closes at ind.

  void sub(const Expr& e, int ind, bool parens) {
    if (parens) put("(");
    expr(e, ind);
    if (parens) put(")");
  }

  void expr(const Expr& e, int ind) {
    if (std::optional<size_t> n = flat_len(e); n && fits(*n)) {
      put_flat(e);
      return;
    }
    switch (e.kind) {
      case ExprKind::Call: return call(*e.as<CallExpr>(), ind);
      case ExprKind::List: return list(*e.as<ListExpr>(), ind);
      case ExprKind::Record: return record(*e.as<RecordExpr>(), ind);
      case ExprKind::Block: return block(*e.as<BlockExpr>(), ind, false);
      case ExprKind::Lambda: return lambda(*e.as<LambdaExpr>(), ind);
      default: break;
    }
    // Nothing to break here: print the pieces, letting the children break.
    std::vector<Piece> ps;
    flat_pieces(e, ps);
    for (const Piece& p : ps) {
      if (p.child) sub(*p.child, ind, p.parens);
      else put(p.text);
    }
    if (ps.size() == 1 && !ps[0].child) mark(e.range);
  }

  // Whether an element of a call or list can open on the line and close later: `map(r => {`.
  // A record or list qualifies when a comment inside breaks it anyway.
  bool huggable(const Expr& e) {
    if (flat_len(e)) return false;
    if (e.kind == ExprKind::Block || expandable(e)) return true;
    return e.kind == ExprKind::Lambda && e.as<LambdaExpr>()->body->kind == ExprKind::Block;
  }

  // A record or list argument, or a lambda returning a record, can open on the line of its call and break
  // one element per line: `map(r => {` fields `}, parallel = auto)`. Returns the record or list.
  static const Expr* expandable(const Expr& e) {
    if (e.kind == ExprKind::Record || e.kind == ExprKind::List) return &e;
    if (e.kind == ExprKind::Lambda) {
      const Expr& body = *e.as<LambdaExpr>()->body;
      if (body.kind == ExprKind::Record && !lambda_body_parens(body)) return &body;
    }
    return nullptr;
  }

  void call(const CallExpr& c, int ind) {
    sub(*c.callee, ind, postfix_base_parens(*c.callee));
    uint32_t close = c.args_range.end - 1;
    put("(");
    mark_at(c.args_range.begin);
    bool gaps = call_gaps(c);
    size_t n = c.args.size();
    size_t total = 0;
    size_t non_flat = 0;
    size_t multi = 0;  // the one argument that is not flat, when there is one
    for (size_t i = 0; i < n; ++i) {
      std::optional<size_t> len = flat_len(*c.args[i].value);
      if (!len) {
        ++non_flat;
        multi = i;
        continue;
      }
      total += *len + (c.args[i].name.empty() ? 0 : c.args[i].name.size() + 3) + (i ? 2 : 0);
    }
    auto put_arg_head = [&](const Arg& a) {
      if (a.name.empty()) return;
      mark(a.name_range);
      put(a.name + " = ");
    };
    // All on this line, or all on this line but for one block that opens here and closes on the last
    // line with the rest: `map(r => {` ... `}, parallel = auto)`.
    bool hug = !gaps && non_flat == 1 && huggable(*c.args[multi].value);
    if (!gaps && non_flat == 0 && !fits(total + 1)) {
      // Too long: one record or list argument that would not fit here anyway may open on this line too.
      size_t start = col();
      size_t candidates = 0;
      for (size_t i = 0; i < n; ++i) {
        const Arg& a = c.args[i];
        size_t head = (i ? 2 : 0) + (a.name.empty() ? 0 : a.name.size() + 3);
        const Expr* inner = expandable(*a.value);
        if (inner) {
          ++candidates;
          multi = i;
          size_t at =
              start + head + (inner == a.value.get() ? 0 : lambda_params(*a.value->as<LambdaExpr>()).size() + 4);
          hug = at + *flat_len(*inner) > static_cast<size_t>(kFmtWidth);
        }
        start += head + *flat_len(*a.value);
      }
      if (candidates != 1) hug = false;
    }
    if ((!gaps && non_flat == 0 && fits(total + 1)) || hug) {
      for (size_t i = 0; i < n; ++i) {
        if (i) put(", ");
        put_arg_head(c.args[i]);
        if (hug && i == multi) expr(*c.args[i].value, ind);
        else put_flat(*c.args[i].value);
      }
      put(")");
      mark_at(close);
      return;
    }
    for (const Arg& a : c.args) {
      newline(ind + 2, Blank::Drop);
      mark(arg_begin(a), arg_begin(a) + 1);
      put_arg_head(a);
      expr(*a.value, ind + 2);
      put(",");
    }
    newline(ind, Blank::Drop, ind + 2);
    mark_at(close);
    put(")");
  }

  void list(const ListExpr& l, int ind) {
    uint32_t open = l.range.begin;
    uint32_t close = l.range.end - 1;
    put("[");
    mark_at(open);
    bool gaps = list_gaps(l);
    size_t n = l.items.size();
    size_t non_flat = 0;
    size_t multi = 0;
    bool atoms = true;
    for (size_t i = 0; i < n; ++i) {
      if (!flat_len(*l.items[i])) {
        ++non_flat;
        multi = i;
      }
      if (!is_atom(*l.items[i])) atoms = false;
    }
    if (!gaps && non_flat == 1 && huggable(*l.items[multi])) {
      for (size_t i = 0; i < n; ++i) {
        if (i) put(", ");
        if (i == multi) expr(*l.items[i], ind);
        else put_flat(*l.items[i]);
      }
      put("]");
      mark_at(close);
      return;
    }
    // A long list of numbers or names: as many to a line as fit. A comment after `[` stays there, any
    // other needs the one-per-line form to keep its place.
    if (n > 0 && non_flat == 0 && atoms && !has_comment(l.items[0]->range.begin, close)) {
      newline(ind + 2, Blank::Drop);
      bool line_empty = true;
      for (const ExprPtr& item : l.items) {
        size_t len = *flat_len(*item) + 1;
        if (!line_empty && !fits(len + 1)) {
          newline(ind + 2, Blank::Drop);
          line_empty = true;
        }
        if (!line_empty) put(" ");
        put_flat(*item);
        put(",");
        line_empty = false;
      }
    } else {
      for (const ExprPtr& item : l.items) {
        newline(ind + 2, Blank::Drop);
        expr(*item, ind + 2);
        put(",");
      }
    }
    newline(ind, Blank::Drop, ind + 2);
    mark_at(close);
    put("]");
  }

  void record(const RecordExpr& r, int ind) {
    uint32_t close = r.range.end - 1;
    put("{");
    mark_at(r.range.begin);
    for (const RecordFieldSyntax& f : r.fields) {
      newline(ind + 2, Blank::Drop);
      mark(f.name_range);
      put(f.name);
      if (f.value) {
        put(": ");
        expr(*f.value, ind + 2);
      }
      put(",");
    }
    newline(ind, Blank::Drop, ind + 2);
    mark_at(close);
    put("}");
  }

  // `body` is true where the grammar expects a block (fn, model and lambda bodies); elsewhere `{ x }` would
  // read as a record, so a block holding only a name gets a `;`.
  void block(const BlockExpr& b, int ind, bool body) {
    put("{");
    mark_at(b.range.begin);
    for (size_t i = 0; i < b.stmts.size(); ++i) {
      const Stmt& s = b.stmts[i];
      newline(ind + 2, i ? Blank::Keep : Blank::Drop);
      mark(s.name_range);
      put(s.name + " = ");
      value(*s.value, ind + 2, true);
      if (i + 1 == b.stmts.size() && continues_previous(*b.result)) put(";");
    }
    newline(ind + 2, b.stmts.empty() ? Blank::Drop : Blank::Keep);
    value(*b.result, ind + 2, false);
    if (!body && b.stmts.empty() && b.result->kind == ExprKind::Name) put(";");
    newline(ind, Blank::Drop, ind + 2);
    mark_at(b.range.end - 1);
    put("}");
  }

  void lambda(const LambdaExpr& l, int ind) {
    mark(l.range.begin, l.range.begin + 1);
    put(lambda_params(l) + " => ");
    if (l.body->kind == ExprKind::Block) block(*l.body->as<BlockExpr>(), ind, true);
    else sub(*l.body, ind, lambda_body_parens(*l.body));
  }

  // A statement's value (declarations, block statements and results, train entries): here long pipes and
  // operator chains break. `after_assign` when the line so far ends in `=`.
  void value(const Expr& e, int ind, bool after_assign) {
    std::optional<size_t> n = flat_len(e);
    if (e.kind == ExprKind::Pipe) {
      std::vector<const Expr*> parts;
      const Expr* cur = &e;
      while (cur->kind == ExprKind::Pipe) {
        parts.push_back(cur->as<PipeExpr>()->rhs.get());
        cur = cur->as<PipeExpr>()->lhs.get();
      }
      parts.push_back(cur);
      std::reverse(parts.begin(), parts.end());
      // Where each `| stage` line would start; a comment before it asks for the break.
      std::vector<uint32_t> bars(parts.size(), kNoPos);
      bool gaps = false;
      for (size_t i = 1; i < parts.size(); ++i) {
        bars[i] = find_punct(parts[i - 1]->range.end, '|', ")");
        if (bars[i] == kNoPos) bars[i] = parts[i]->range.begin;
        gaps = gaps || has_comment(parts[i - 1]->range.end, bars[i]);
      }
      if (n && fits(*n) && !gaps) {
        put_flat(e);
        return;
      }
      sub(*parts[0], ind, pipe_lhs_parens(*parts[0]));
      for (size_t i = 1; i < parts.size(); ++i) {
        newline(ind + 2, Blank::Drop);
        mark_at(bars[i]);
        put("| ");
        sub(*parts[i], ind + 4, pipe_rhs_parens(*parts[i]));
      }
      return;
    }
    if (e.kind == ExprKind::Binary && e.as<BinaryExpr>()->op != BinaryOp::Pow) {
      // The chain of operators of e's precedence: a + b - c is ((a + b) - c).
      int prec = binary_op_precedence(e.as<BinaryExpr>()->op);
      std::vector<const BinaryExpr*> ops;
      const Expr* cur = &e;
      while (cur->kind == ExprKind::Binary && binary_op_precedence(cur->as<BinaryExpr>()->op) == prec &&
             (cur == &e || !parenthesized_comparison(*cur))) {
        ops.push_back(cur->as<BinaryExpr>());
        cur = cur->as<BinaryExpr>()->lhs.get();
      }
      std::reverse(ops.begin(), ops.end());
      const Expr* first = cur;
      bool gaps = false;
      const Expr* prev = first;
      for (const BinaryExpr* b : ops) {
        gaps = gaps || has_comment(prev->range.end, b->op_range.begin);
        prev = b->rhs.get();
      }
      if (n && fits(*n) && !gaps) {
        put_flat(e);
        return;
      }
      // Operators lead their lines:   x =
      //                                     a * b
      //                                   + c
      int first_ind = ind;
      if (after_assign) {
        first_ind = ind + 4;
        newline(first_ind, Blank::Drop);
      }
      sub(*first, first_ind, binary_operand_parens(*first, ops[0]->op, false));
      for (const BinaryExpr* b : ops) {
        newline(ind + 2, Blank::Drop);
        mark(b->op_range);
        std::string op = binary_op_spelling(b->op);
        put(op + " ");
        sub(*b->rhs, ind + 3 + static_cast<int>(op.size()), binary_operand_parens(*b->rhs, b->op, true));
      }
      return;
    }
    expr(e, ind);
  }

  // ----------------------------------------------------------------------------------------------------
  // Declarations

  std::string type_text(const TypeSyntax& t) const {
    std::string s = t.name;
    if (!t.has_dims) return s;
    s += "[";
    for (size_t i = 0; i < t.dims.size(); ++i) {
      const DimSyntax& d = t.dims[i];
      if (i) s += ", ";
      switch (d.kind) {
        case DimSyntax::Known: {
          std::string_view spelled = text_of(d.range);
          s += spelled.empty() ? std::to_string(d.value) : std::string(spelled);
          break;
        }
        case DimSyntax::Unknown: s += "?"; break;
        case DimSyntax::Named: s += d.name; break;
      }
    }
    return s + "]";
  }

  // `(a: f32, b: f32[10])`, broken one per line when too long or holding comments. `tail` is what
  // follows on the line (` -> f32 {`).
  void params(const Decl& d, size_t tail) {
    uint32_t open = find_punct(d.name_range.end, '(');
    uint32_t after_open = open == kNoPos ? d.name_range.end : open + 1;
    uint32_t last_end = d.params.empty() ? after_open : d.params.back().type.range.end;
    uint32_t close = find_punct(last_end, ')', ",");
    std::string flat = "(";
    for (size_t i = 0; i < d.params.size(); ++i)
      flat += (i ? ", " : "") + d.params[i].name + ": " + type_text(d.params[i].type);
    flat += ")";
    bool gaps = close != kNoPos && gap_comments(
                                       after_open, close, d.params, [](const Param& p) { return p.name_range.begin; },
                                       [](const Param& p) { return p.type.range.end; });
    if (!gaps && fits(flat.size() + tail)) {
      put(flat);
      for (const Param& p : d.params) mark(p.name_range);
      mark_at(close);
      return;
    }
    put("(");
    mark_at(open);
    for (const Param& p : d.params) {
      newline(2, Blank::Drop);
      mark(p.name_range);
      put(p.name + ": " + type_text(p.type) + ",");
      mark(p.type.range);
    }
    newline(0, Blank::Drop, 2);
    mark_at(close);
    put(")");
  }

  std::string result_text(const Decl& d) const {
    return d.result_type ? " -> " + type_text(*d.result_type) : std::string();
  }

  void decl(const Decl& d) {
    newline(0, Blank::Keep);
    mark(d.range.begin, d.range.begin + 1);
    switch (d.kind) {
      case DeclKind::Import:
        put("import ");
        put(text_of(d.name_range));
        mark(d.name_range);
        return;
      case DeclKind::Const:
        put("const " + d.name);
        mark(d.name_range);
        if (d.declared_type) put(": " + type_text(*d.declared_type));
        put(" = ");
        value(*d.value, 0, true);
        return;
      case DeclKind::Fn: {
        put("fn " + d.name);
        mark(d.name_range);
        std::string result = result_text(d);
        params(d, result.size() + 2);
        put(result);
        if (d.result_type) mark(d.result_type->range);
        if (d.value->kind == ExprKind::Block) {
          put(" ");
          block(*d.value->as<BlockExpr>(), 0, true);
        } else {
          put(" = ");
          value(*d.value, 0, true);
        }
        return;
      }
      case DeclKind::Source:
        put("source " + d.name + " = ");
        mark(d.name_range);
        value(*d.value, 0, true);
        if (d.has_schema) schema(d);
        return;
      case DeclKind::Pipeline:
        put("pipeline " + d.name + " = ");
        mark(d.name_range);
        value(*d.value, 0, true);
        return;
      case DeclKind::Model: {
        put("model " + d.name);
        mark(d.name_range);
        std::string result = result_text(d);
        params(d, result.size() + 2);
        put(result);
        if (d.result_type) mark(d.result_type->range);
        put(" ");
        block(*d.value->as<BlockExpr>(), 0, true);
        return;
      }
      case DeclKind::Train:
        put("train " + d.name + " = ");
        mark(d.name_range);
        train(d);
        return;
    }
  }

  void schema(const Decl& d) {
    uint32_t open = find_punct(d.value->range.end, '{', ")");
    uint32_t close = d.range.end - 1;
    put(" {");
    mark_at(open);
    if (d.schema.empty() && (open == kNoPos || !has_comment(open + 1, close))) {
      put("}");
      mark_at(close);
      return;
    }
    for (size_t i = 0; i < d.schema.size(); ++i) {
      const SchemaField& f = d.schema[i];
      newline(2, i ? Blank::Keep : Blank::Drop);
      mark(f.name_range);
      put(f.name + ": " + type_text(f.type));
      mark(f.type.range);
      if (f.default_value) {
        put(" = ");
        value(*f.default_value, 2, true);
      }
    }
    newline(0, Blank::Drop, 2);
    mark_at(close);
    put("}");
  }

  void train(const Decl& d) {
    uint32_t eq = find_punct(d.name_range.end, '=');
    uint32_t open = eq == kNoPos ? kNoPos : find_punct(eq + 1, '{');
    uint32_t close = d.range.end - 1;
    put("{");
    mark_at(open);
    if (d.entries.empty() && (open == kNoPos || !has_comment(open + 1, close))) {
      put("}");
      mark_at(close);
      return;
    }
    for (size_t i = 0; i < d.entries.size(); ++i) {
      const TrainEntry& e = d.entries[i];
      newline(2, i ? Blank::Keep : Blank::Drop);
      mark(e.key_range);
      put(e.key + " = ");
      value(*e.value, 2, true);
    }
    newline(0, Blank::Drop, 2);
    mark_at(close);
    put("}");
  }

  // ----------------------------------------------------------------------------------------------------
  // Pass 2: interleave comments and blank lines.

  std::string assemble() {
    struct Out {
      std::string text;
      std::string trailing;
    };
    std::vector<Out> out;
    size_t next = 0;          // next comment to place
    bool can_attach = false;  // the last output line is code without a trailing comment yet
    uint32_t prev_end = 0;    // end of the last token placed

    // Places the comments that start before `limit`, and the blank lines among them.
    auto flush = [&](uint32_t limit, int indent, Blank policy, bool eof) {
      size_t gap_first = out.size();
      bool pending = false;
      bool blank_done = false;
      uint32_t scan = prev_end;
      auto scan_to = [&](uint32_t to) {
        if (to <= scan) return;
        if (has_blank_line(scan, to)) pending = true;
        scan = to;
      };
      auto emit_blank = [&] {
        if (pending && policy != Blank::Drop && !out.empty()) {
          out.push_back({});
          blank_done = true;
        }
        pending = false;
      };
      while (next < comments_.size() && comments_[next].range.begin < limit) {
        const Comment& c = comments_[next++];
        scan_to(c.range.begin);
        std::string text(rstrip(c.text));
        if (!c.own_line && can_attach) {
          out.back().trailing = std::move(text);
        } else {
          emit_blank();
          out.push_back({std::string(static_cast<size_t>(indent), ' ') + text, {}});
        }
        can_attach = false;
        scan = std::max(scan, c.range.end);
      }
      if (eof) return;
      scan_to(limit);
      emit_blank();
      if (policy == Blank::Force && !blank_done && gap_first > 0) out.insert(out.begin() + gap_first, Out{});
    };

    for (const Line& l : lines_) {
      flush(l.src_begin == kNoPos ? 0 : l.src_begin, l.comment_indent, l.blank, false);
      out.push_back({std::string(static_cast<size_t>(l.indent), ' ') + l.text, {}});
      can_attach = true;
      prev_end = std::max(prev_end, l.src_end);
    }
    flush(kNoPos, 0, Blank::Keep, true);

    std::string result;
    for (const Out& o : out) {
      std::string line(rstrip(o.text));
      if (!o.trailing.empty()) line += (line.empty() ? "" : "  ") + o.trailing;
      result += line;
      result += '\n';
    }
    return result;
  }

  const Module& module_;
  const std::string& src_;
  const std::vector<Comment>& comments_;
  std::vector<Line> lines_;
  std::unordered_map<const Expr*, std::optional<size_t>> flat_memo_;
};

}  // namespace

std::string format_module(const Module& m, const SourceFile& file) { return Formatter(m, file).run(); }

}  // namespace pipec

#include "compiler/front/ast_query.h"

namespace pipec {

namespace {

// Calls `fn` on each direct child expression of `e`, in source order. Null children are skipped.
template <class Fn>
void for_each_child(const Expr& e, Fn&& fn) {
  auto visit = [&](const ExprPtr& p) {
    if (p) fn(*p);
  };
  switch (e.kind) {
    case ExprKind::IntLit:
    case ExprKind::FloatLit:
    case ExprKind::StringLit:
    case ExprKind::BoolLit:
    case ExprKind::Name: break;
    case ExprKind::List:
      for (const auto& item : e.as<ListExpr>()->items) visit(item);
      break;
    case ExprKind::Record:
      for (const auto& f : e.as<RecordExpr>()->fields) visit(f.value);
      break;
    case ExprKind::Block: {
      const auto* b = e.as<BlockExpr>();
      for (const auto& s : b->stmts) visit(s.value);
      visit(b->result);
      break;
    }
    case ExprKind::Call: {
      const auto* c = e.as<CallExpr>();
      visit(c->callee);
      for (const auto& a : c->args) visit(a.value);
      break;
    }
    case ExprKind::Index: {
      const auto* ix = e.as<IndexExpr>();
      visit(ix->base);
      for (const auto& item : ix->items) {
        visit(item.value);
        visit(item.start);
        visit(item.stop);
        visit(item.step);
      }
      break;
    }
    case ExprKind::Member: visit(e.as<MemberExpr>()->base); break;
    case ExprKind::Unary: visit(e.as<UnaryExpr>()->operand); break;
    case ExprKind::Binary: {
      const auto* b = e.as<BinaryExpr>();
      visit(b->lhs);
      visit(b->rhs);
      break;
    }
    case ExprKind::Pipe: {
      const auto* p = e.as<PipeExpr>();
      visit(p->lhs);
      visit(p->rhs);
      break;
    }
    case ExprKind::Lambda: visit(e.as<LambdaExpr>()->body); break;
  }
}

// Iterative pre-order walk: long operator chains nest thousands deep, and an explicit stack keeps
// editor requests from depending on the thread's stack size.
void walk(const Expr& root, const std::function<void(const Expr&)>& fn) {
  std::vector<const Expr*> stack{&root};
  std::vector<const Expr*> children;
  while (!stack.empty()) {
    const Expr* e = stack.back();
    stack.pop_back();
    fn(*e);
    children.clear();
    for_each_child(*e, [&](const Expr& c) { children.push_back(&c); });
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back(*it);
  }
}

bool contains(const SourceRange& r, uint32_t offset) { return r.valid() && r.contains(offset); }

}  // namespace

void walk_exprs(const Decl& decl, const std::function<void(const Expr&)>& fn) {
  if (decl.value) walk(*decl.value, fn);
  for (const auto& f : decl.schema)
    if (f.default_value) walk(*f.default_value, fn);
  for (const auto& e : decl.entries)
    if (e.value) walk(*e.value, fn);
}

const Decl* decl_at(const Module& module, uint32_t offset) {
  for (const auto& d : module.decls)
    if (d && contains(d->range, offset)) return d.get();
  return nullptr;
}

const Expr* expr_at(const Module& module, uint32_t offset) {
  const Decl* d = decl_at(module, offset);
  if (!d) return nullptr;
  // Descend from the roots: at each level take the child that contains the offset. Ranges of siblings
  // do not overlap, so the last match at the deepest level is the innermost expression.
  const Expr* found = nullptr;
  auto descend = [&](const Expr* e) {
    while (e && contains(e->range, offset)) {
      found = e;
      const Expr* next = nullptr;
      for_each_child(*e, [&](const Expr& c) {
        if (!next && contains(c.range, offset)) next = &c;
      });
      e = next;
    }
  };
  auto try_root = [&](const ExprPtr& root) {
    if (!found && root && contains(root->range, offset)) descend(root.get());
  };
  try_root(d->value);
  for (const auto& f : d->schema) try_root(f.default_value);
  for (const auto& e : d->entries) try_root(e.value);
  return found;
}

}  // namespace pipec

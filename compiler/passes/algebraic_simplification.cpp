#include "compiler/passes/algebraic_simplification.h"

#include <cmath>

#include "compiler/passes/function_edit.h"
#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

// True when the constant is `want` in every position (+0.0 only: x - (-0.0) is not x for x = -0.0).
bool all_equal(const Value& v, double want) {
  if (v.kind == Value::List) {
    for (const Value& x : v.items)
      if (!all_equal(x, want)) return false;
    return !v.items.empty();
  }
  if (!v.is_number()) return false;
  double d = v.as_double();
  return d == want && !std::signbit(d);
}

bool is_const(const ExprFunction& fn, int id, double want) {
  const Instr& in = fn.body[static_cast<size_t>(id)];
  return in.op == OpKind::Const && all_equal(in.attrs.at("value"), want);
}

bool same_type(const Type& a, const Type& b) { return a.dtype == b.dtype && a.shape == b.shape; }

// The value instruction `i` equals, when an identity applies; -1 otherwise.
int simplify(const ExprFunction& fn, size_t i) {
  const Instr& in = fn.body[i];
  auto operand = [&](size_t k) -> const Instr& { return fn.body[static_cast<size_t>(in.operands[k])]; };
  // The replacement must be the very same value: same dtype and shape, nothing broadcast.
  auto keep_if_same = [&](int id) { return same_type(fn.body[static_cast<size_t>(id)].type, in.type) ? id : -1; };
  if (in.operands.size() == 1) {
    const Instr& x = operand(0);
    switch (in.op) {
      case OpKind::Cast:
      case OpKind::Reshape:
        if (x.type.fully_known() && same_type(x.type, in.type)) return in.operands[0];
        return -1;
      case OpKind::Neg:  // involutions: f(f(x)) = x
      case OpKind::BitNot:
      case OpKind::Not: return x.op == in.op ? keep_if_same(x.operands[0]) : -1;
      default: return -1;
    }
  }
  if (in.operands.size() != 2) return -1;
  const int a = in.operands[0], b = in.operands[1];
  const bool fl = is_float(in.type.dtype);
  switch (in.op) {
    case OpKind::Mul:
      if (is_const(fn, b, 1)) return keep_if_same(a);
      if (is_const(fn, a, 1)) return keep_if_same(b);
      break;
    case OpKind::Sub:
      if (is_const(fn, b, 0)) return keep_if_same(a);
      break;
    case OpKind::Div:
      if (fl && is_const(fn, b, 1)) return keep_if_same(a);
      break;
    case OpKind::Add:  // x + 0.0 is not x for x = -0.0: integers only
    case OpKind::BitOr:
    case OpKind::BitXor:
      if (fl) break;
      if (is_const(fn, b, 0)) return keep_if_same(a);
      if (is_const(fn, a, 0)) return keep_if_same(b);
      break;
    case OpKind::Shl:
    case OpKind::Shr:
      if (!fl && is_const(fn, b, 0)) return keep_if_same(a);
      break;
    case OpKind::FloorDiv:
      if (!fl && is_const(fn, b, 1)) return keep_if_same(a);
      break;
    case OpKind::And:
    case OpKind::Or: {
      if (in.type.dtype != DType::Bool) break;
      const double unit = in.op == OpKind::And ? 1 : 0;
      if (is_const(fn, b, unit)) return keep_if_same(a);
      if (is_const(fn, a, unit)) return keep_if_same(b);
      break;
    }
    default: break;
  }
  return -1;
}

bool simplify_function(ExprFunction& fn) {
  bool changed = false;
  for (size_t i = 0; i < fn.body.size(); ++i) {
    Instr& in = fn.body[i];
    // reshape(reshape(x)) reads x directly (a reshape only sees the element count).
    if (in.op == OpKind::Reshape && in.operands.size() == 1) {
      const Instr& inner = fn.body[static_cast<size_t>(in.operands[0])];
      if (inner.op == OpKind::Reshape && inner.operands.size() == 1 && inner.type.fully_known() &&
          fn.body[static_cast<size_t>(inner.operands[0])].type.fully_known()) {
        in.operands[0] = inner.operands[0];
        changed = true;
      }
    }
    if (in.op == OpKind::Param || in.op == OpKind::Const) continue;
    int r = simplify(fn, i);
    if (r < 0 || r == static_cast<int>(i)) continue;
    replace_uses(fn, static_cast<int>(i), r);
    changed = true;
  }
  return changed;
}

}  // namespace

bool algebraic_simplification(Plan& plan) { return rewrite_functions(plan, simplify_function); }

}  // namespace pipec

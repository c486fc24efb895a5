// Typing of expressions other than calls: names, fields, indexing, operators, literals, blocks, lambdas.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "compiler/sema/checker.h"
#include "compiler/sema/const_eval.h"
#include "compiler/sema/promotion.h"

namespace pipec {

Type Checker::check(Expr& e) {
  Type t;
  switch (e.kind) {
    case ExprKind::IntLit: {
      auto& x = *e.as<IntLitExpr>();
      t = Type::tensor(DType::I64);
      t.weak = true;
      e.constant = Value::make_int(x.value);
      break;
    }
    case ExprKind::FloatLit: {
      auto& x = *e.as<FloatLitExpr>();
      t = Type::tensor(DType::F64);
      t.weak = true;
      e.constant = Value::make_float(x.value);
      break;
    }
    case ExprKind::StringLit:
      t = Type::tensor(DType::Bytes);
      e.constant = Value::make_string(e.as<StringLitExpr>()->value);
      break;
    case ExprKind::BoolLit:
      t = Type::tensor(DType::Bool);
      t.weak = true;
      e.constant = Value::make_bool(e.as<BoolLitExpr>()->value);
      break;
    case ExprKind::List: t = check_list(*e.as<ListExpr>()); break;
    case ExprKind::Record: t = check_record(*e.as<RecordExpr>()); break;
    case ExprKind::Block: t = check_block(*e.as<BlockExpr>()); break;
    case ExprKind::Name: t = check_name(*e.as<NameExpr>()); break;
    case ExprKind::Call: t = check_call(*e.as<CallExpr>()); break;
    case ExprKind::Index: t = check_index(*e.as<IndexExpr>()); break;
    case ExprKind::Member: t = check_member(*e.as<MemberExpr>()); break;
    case ExprKind::Unary: t = check_unary(*e.as<UnaryExpr>()); break;
    case ExprKind::Binary: t = check_binary(*e.as<BinaryExpr>()); break;
    case ExprKind::Pipe: t = check_pipe(*e.as<PipeExpr>()); break;
    case ExprKind::Lambda:
      // A lambda is only meaningful as an argument of map/filter, which check it with its parameter types.
      diags().report(DiagKind::type_mismatch, e.range, "a function literal can only be an argument of map or filter");
      t = Type::error();
      break;
  }
  e.type = t;
  return t;
}

Type Checker::check_name(NameExpr& e) {
  if (e.name == "<error>") return Type::error();
  if (at_probe(e)) record_name_site(e, false, nullptr);
  if (Local* l = lookup_local(e.name)) {
    l->used = true;
    e.target = l->binding;
    if (element_args_ && misplaced_element_read(e)) return Type::error();
    if (l->value) e.constant = l->value;
    return l->type;
  }
  if (train_element_) {
    if (const Type* ft = Type::dataset(*train_element_).field(e.name)) {
      e.target = Binding{Binding::Option, e.name, {}, nullptr, nullptr};
      return *ft;
    }
  }
  if (const Decl* d = program_.global(e.name)) {
    if (d->kind != DeclKind::Import) {
      e.target = Binding{Binding::Global, e.name, d->name_range, d, nullptr};
      Type t = global_type(*d, e.range);
      if (d->kind == DeclKind::Const && d->value && d->value->constant) e.constant = d->value->constant;
      if (d->kind == DeclKind::Fn) return Type::function(d->name);
      return t;
    }
  }
  if (parse_dtype(e.name)) {
    e.target = Binding{Binding::Builtin, e.name, {}, nullptr, nullptr};
    return Type::function(e.name);
  }
  // A builtin named without being called: the one this context calls, else any of that name.
  const Builtin* b = find_builtin(e.name, callable_kinds(ctx_, PipedInput::None));
  if (!b)
    b = find_builtin(e.name, {BuiltinKind::Op, BuiltinKind::Stage, BuiltinKind::Layer, BuiltinKind::Source,
                              BuiltinKind::Loss, BuiltinKind::Optimizer, BuiltinKind::Strategy, BuiltinKind::Schedule,
                              BuiltinKind::Sink, BuiltinKind::Format});
  if (b) {
    e.target = Binding{Binding::Builtin, e.name, {}, nullptr, nullptr, b};
    return Type::function(e.name);
  }
  auto& diag = diags().report(DiagKind::unknown_name, e.range, fmt::format("unknown name `{}`", e.name));
  std::string best = closest_name(e.name, visible_names());
  if (best.empty()) best = closest_name(e.name, builtin_names({BuiltinKind::Op}));
  if (!best.empty()) {
    diag.help = fmt::format("did you mean `{}`?", best);
    diag.replacement = best;
  }
  return Type::error();
}

// expr DOT name  # memberExpr
Type Checker::check_member(MemberExpr& e) {
  Type base = check(*e.base);
  if (base.is_error()) return base;
  if (base.kind != TypeKind::Record) {
    diags().report(DiagKind::type_mismatch, e.range,
                   fmt::format("`.{}` needs a record, but this is {}", e.member, type_to_string(base)));
    return Type::error();
  }
  if (const Type* f = base.field(e.member)) return *f;
  auto& diag =
      diags().report(DiagKind::unknown_field, e.member_range, fmt::format("the record has no field `{}`", e.member));
  std::vector<std::string> names;
  for (const Field& f : *base.fields) names.push_back(f.name);
  std::string best = closest_name(e.member, names);
  if (!best.empty()) {
    diag.help = fmt::format("did you mean `{}`?", best);
    diag.replacement = best;
  } else {
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
    diag.notes.push_back({{}, fmt::format("its fields are: {}", list)});
  }
  return Type::error();
}

namespace {

// Python slice bounds on a dimension of known size; nullopt when a bound lies outside it.
std::optional<int64_t> slice_length(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
                                    int64_t step) {
  auto norm = [&](int64_t v) { return v < 0 ? v + dim : v; };
  if (step > 0) {
    int64_t s = start ? norm(*start) : 0;
    int64_t t = stop ? norm(*stop) : dim;
    if (s < 0 || s > dim || t < 0 || t > dim) return std::nullopt;
    return t > s ? 1 + (t - s - 1) / step : 0;  // (t - s + step - 1) / step would overflow for a huge step
  }
  int64_t s = start ? norm(*start) : dim - 1;
  int64_t t = stop ? norm(*stop) : -1;
  if (s < -1 || s >= dim || t < -1 || t >= dim) return std::nullopt;
  return s > t ? 1 + (s - t - 1) / -step : 0;
}

}  // namespace

// expr LBRACK index (COMMA index)* COMMA? RBRACK  # indexExpr
Type Checker::check_index(IndexExpr& e) {
  Type base = check(*e.base);
  bool failed = base.is_error();
  if (!failed && !base.is_tensor()) {
    diags().report(DiagKind::type_mismatch, e.base->range,
                   fmt::format("only tensors can be indexed, not {}", type_to_string(base)));
    failed = true;
  }
  // Check every index expression even when the base failed, so their own errors are found.
  int ellipses = 0;
  int consumed = 0;
  for (IndexItem& item : e.items) {
    if (item.kind == IndexItem::Ellipsis) ++ellipses;
    else ++consumed;
    for (Expr* x : {item.value.get(), item.start.get(), item.stop.get(), item.step.get()})
      if (x) check(*x);
  }
  if (failed) return Type::error();
  if (ellipses > 1) {
    diags().report(DiagKind::invalid_index, e.range, "an index can hold at most one `...`");
    return Type::error();
  }
  if (consumed > base.rank()) {
    diags().report(DiagKind::too_many_indices, e.range,
                   fmt::format("{} {} for a value of rank {} ({})", consumed, consumed == 1 ? "index" : "indices",
                               base.rank(), type_to_string(base)));
    return Type::error();
  }
  std::vector<int64_t> out;
  int64_t dim_i = 0;
  int gathers = 0;
  for (IndexItem& item : e.items) {
    if (item.kind == IndexItem::Ellipsis) {
      int64_t skip = base.rank() - consumed;
      for (int64_t k = 0; k < skip; ++k) out.push_back(base.shape[dim_i++]);
      continue;
    }
    int64_t dim = base.shape[dim_i++];
    if (item.kind == IndexItem::Single) {
      const Type& it = item.value->type;
      if (it.is_error()) return Type::error();
      if (!it.is_tensor() || !(is_integer(it.dtype)) || it.rank() > 1) {
        diags().report(DiagKind::integer_expected, item.range,
                       fmt::format("an index must be an integer or a list of integers, not {}", type_to_string(it)));
        return Type::error();
      }
      if (!item.value->constant) {
        // A scalar computed at run time selects like a constant one and is checked at run time (it
        // removes the dimension); a gather needs its list at compile time.
        if (it.rank() == 0) continue;
        diags().report(DiagKind::not_constant, item.range,
                       "an index list must be a constant (gathers at indices computed at run time are not supported)");
        return Type::error();
      }
      std::vector<int64_t> idx;
      const Value& v = *item.value->constant;
      if (v.kind == Value::List)
        for (const Value& x : v.items) idx.push_back(x.i);
      else idx.push_back(v.i);
      if (dim >= 0) {
        for (int64_t i : idx)
          if (i < -dim || i >= dim) {
            diags().report(DiagKind::invalid_index, item.range,
                           fmt::format("index {} is out of range for a dimension of size {}", i, dim));
            return Type::error();
          }
      }
      if (it.rank() == 1) {
        if (++gathers > 1) {
          diags().report(DiagKind::invalid_index, item.range, "only one index list is allowed per subscript");
          return Type::error();
        }
        out.push_back(it.shape[0]);
      }
      continue;
    }
    // Slice: integer scalar bounds. Constant ones give the size; one computed at run time gives `?`
    // (Python's clamping at run time).
    auto bound = [&](Expr* x) -> std::optional<int64_t> {
      if (!x || !x->constant || x->constant->kind != Value::Int) return std::nullopt;
      return x->constant->i;
    };
    for (Expr* x : {item.start.get(), item.stop.get(), item.step.get()}) {
      if (x && !x->type.is_error() && (!x->type.is_scalar() || !is_integer(x->type.dtype))) {
        diags().report(DiagKind::integer_expected, x->range, "slice bounds must be integers");
        return Type::error();
      }
    }
    const bool step_known = !item.step || bound(item.step.get());
    // i64's minimum steps like its successor (no dimension is that long), whose negation fits.
    int64_t step = std::max(bound(item.step.get()).value_or(1), std::numeric_limits<int64_t>::min() + 1);
    if (step == 0) {
      diags().report(DiagKind::invalid_index, item.range, "a slice step cannot be zero");
      return Type::error();
    }
    bool all_const = (!item.start || bound(item.start.get())) && (!item.stop || bound(item.stop.get())) && step_known;
    // Constant bounds on a known dimension must lie within it, also beside a bound computed at run time
    // (which is left out of the check); with a step computed at run time the direction, and so the
    // valid range, is unknown: such a slice clamps every bound at run time.
    if (dim < 0 || !step_known) {
      out.push_back(kUnknownDim);
      continue;
    }
    auto len = slice_length(dim, bound(item.start.get()), bound(item.stop.get()), step);
    if (len && !all_const) {
      out.push_back(kUnknownDim);
      continue;
    }
    if (!len) {
      auto& diag = diags().report(DiagKind::invalid_index, item.range,
                                  fmt::format("slice bounds are outside a dimension of size {}", dim));
      diag.help = "constant bounds must lie within the dimension (numpy would clip them; pipec reports them)";
      return Type::error();
    }
    out.push_back(*len);
  }
  for (; dim_i < base.rank(); ++dim_i) out.push_back(base.shape[dim_i]);
  return Type::tensor(base.dtype, out);
}

Type Checker::check_unary(UnaryExpr& e) {
  Type t = check(*e.operand);
  if (t.is_error()) return t;
  if (!t.is_tensor() || t.dtype == DType::Bytes) {
    diags().report(
        DiagKind::type_mismatch, e.range,
        fmt::format("operator `{}` needs a numeric tensor, not {}", unary_op_spelling(e.op), type_to_string(t)));
    return Type::error();
  }
  Type r = t;
  if (e.op == UnaryOp::Not) {
    if (t.dtype != DType::Bool) {
      diags().report(DiagKind::bool_expected, e.range, fmt::format("`!` needs a bool, not {}", type_to_string(t)));
      return Type::error();
    }
  } else if (e.op == UnaryOp::BitNot) {
    if (!is_integer(t.dtype)) {
      diags().report(DiagKind::integer_expected, e.range,
                     fmt::format("`~` needs an integer, not {}", type_to_string(t)));
      return Type::error();
    }
  } else if (t.dtype == DType::Bool) {
    diags().report(DiagKind::type_mismatch, e.range,
                   fmt::format("`{}` needs a number, not bool", unary_op_spelling(e.op)));
    return Type::error();
  }
  if (e.operand->constant) {
    FoldResult f = fold_unary(e.op, *e.operand->constant, r.dtype);
    if (f.error == FoldError::Overflow) {
      diags().report(DiagKind::integer_overflow, e.range, "the negated constant does not fit in i64");
      return Type::error();  // reported; the const holding it should not also be called unknown
    }
    e.constant = f.value;
  }
  return r;
}

namespace {

bool unparenthesized_comparison(const Expr& e) {
  return e.kind == ExprKind::Binary && is_comparison(e.as<BinaryExpr>()->op) && !e.as<BinaryExpr>()->parenthesized;
}

// The operands and operators of a chain of comparisons written without parentheses, left to right:
// `a < b <= c` (parsed as `(a < b) <= c`) gives a, b, c and <, <=.
void flatten_chain(BinaryExpr& e, std::vector<Expr*>& operands, std::vector<BinaryOp>& ops) {
  for (int side = 0; side < 2; ++side) {
    Expr& x = side == 0 ? *e.lhs : *e.rhs;
    if (side == 1) ops.push_back(e.op);
    if (unparenthesized_comparison(x)) flatten_chain(*x.as<BinaryExpr>(), operands, ops);
    else operands.push_back(&x);
  }
}

}  // namespace

// `a < b < c` means `(a < b) < c` in the grammar, a bool compared with c: almost always a mistake (in
// math and Python it means both comparisons), and a silent one, since a bool compares with a number
// (§6.3). Refused, as Rust and Swift do; `(a < b) < c` says the bool is meant.
Type Checker::report_chained_comparison(BinaryExpr& e) {
  std::vector<Expr*> operands;
  std::vector<BinaryOp> ops;
  flatten_chain(e, operands, ops);
  // The operands still get checked: their own errors are reported, and the editor shows their types.
  for (Expr* x : operands) check(*x);
  const std::string* text = e.range.valid() ? &diags().sources().file(e.range.file).text() : nullptr;
  auto spelled = [&](const Expr& x) {
    std::string s = text && x.range.file == e.range.file && x.range.end <= text->size()
                        ? text->substr(x.range.begin, x.range.end - x.range.begin)
                        : std::string("...");
    // An operand that binds no tighter than a comparison was in parentheses (`(a && b) < c < d`).
    bool loose = x.kind == ExprKind::Pipe || x.kind == ExprKind::Lambda ||
                 (x.kind == ExprKind::Binary &&
                  binary_op_precedence(x.as<BinaryExpr>()->op) <= binary_op_precedence(BinaryOp::Eq));
    return loose ? "(" + s + ")" : s;
  };
  std::string both, nested = spelled(*operands[0]);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string link =
        fmt::format("{} {} {}", spelled(*operands[i]), binary_op_spelling(ops[i]), spelled(*operands[i + 1]));
    both += (i ? " && " : "") + link;
    nested =
        fmt::format("{} {} {}", i ? "(" + nested + ")" : nested, binary_op_spelling(ops[i]), spelled(*operands[i + 1]));
  }
  std::string first = fmt::format("{} {} {}", spelled(*operands[0]), binary_op_spelling(ops[0]), spelled(*operands[1]));
  auto& diag = diags().report(DiagKind::chained_comparison, e.range,
                              fmt::format("comparisons do not chain: this would compare the bool `{}` with `{}`", first,
                                          spelled(*operands[2])));
  diag.help = fmt::format("to test each comparison, write `{}`; to compare the bool, write `{}`", both, nested);
  diag.replacement = both;
  return Type::error();
}

Type Checker::check_binary(BinaryExpr& e) {
  if (is_comparison(e.op) && (unparenthesized_comparison(*e.lhs) || unparenthesized_comparison(*e.rhs)))
    return report_chained_comparison(e);
  Type a = check(*e.lhs);
  Type b = check(*e.rhs);
  if (a.is_error() || b.is_error()) return Type::error();
  const char* op = binary_op_spelling(e.op);
  for (const Type* t : {&a, &b}) {
    if (!t->is_tensor()) {
      diags().report(DiagKind::type_mismatch, t == &a ? e.lhs->range : e.rhs->range,
                     fmt::format("operator `{}` needs tensors, not {}", op, type_to_string(*t)));
      return Type::error();
    }
  }
  auto p = promote(a.dtype, a.weak, b.dtype, b.weak);
  if (!p || (p->dtype == DType::Bytes && e.op != BinaryOp::Eq && e.op != BinaryOp::Ne)) {
    diags().report(DiagKind::type_mismatch, e.op_range,
                   fmt::format("operator `{}` cannot combine {} and {}", op, type_to_string(a), type_to_string(b)));
    return Type::error();
  }
  auto shape = broadcast_shapes(a.shape, b.shape);
  if (!shape) {
    auto& diag = diags().report(
        DiagKind::shape_mismatch, e.op_range,
        fmt::format("shapes {} and {} do not broadcast", shape_to_spec(a.shape), shape_to_spec(b.shape)));
    diag.notes.push_back({e.lhs->range, fmt::format("the left side is {}", type_to_string(a))});
    diag.notes.push_back({e.rhs->range, fmt::format("the right side is {}", type_to_string(b))});
    return Type::error();
  }
  DType result = p->dtype;
  switch (e.op) {
    case BinaryOp::And:
    case BinaryOp::Or:
      if (a.dtype != DType::Bool || b.dtype != DType::Bool) {
        diags().report(
            DiagKind::bool_expected, e.op_range,
            fmt::format("`{}` needs bools on both sides, not {} and {}", op, type_to_string(a), type_to_string(b)));
        return Type::error();
      }
      result = DType::Bool;
      break;
    case BinaryOp::BitAnd:
    case BinaryOp::BitXor:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      if (!is_integer(p->dtype) && !(p->dtype == DType::Bool && e.op != BinaryOp::Shl && e.op != BinaryOp::Shr)) {
        diags().report(DiagKind::integer_expected, e.op_range,
                       fmt::format("`{}` needs integers, not {} and {}", op, type_to_string(a), type_to_string(b)));
        return Type::error();
      }
      break;
    case BinaryOp::Div:
      // Weak results are i64, f64 or bool: `true / 2` is a weak f64 like `1 / 2`.
      result = p->weak ? DType::F64 : true_division_dtype(p->dtype);
      break;
    default:
      if (is_comparison(e.op)) result = DType::Bool;
      else if (p->dtype == DType::Bool) result = DType::I64;  // true + true is arithmetic on integers
      break;
  }
  Type r = Type::tensor(result, *shape);
  r.weak = p->weak;
  if (e.lhs->constant && e.rhs->constant) {
    FoldResult f =
        fold_binary(e.op, *e.lhs->constant, *e.rhs->constant, binary_operand_dtype(e.op, p->dtype, result), result);
    if (f.error == FoldError::DivisionByZero) {
      diags().report(DiagKind::division_by_zero, e.rhs->range, fmt::format("integer `{}` by zero", op));
      return Type::error();
    }
    if (f.error == FoldError::Overflow) {
      diags().report(DiagKind::integer_overflow, e.range,
                     fmt::format("the constant result of `{}` does not fit in {}", op, dtype_name(result)));
      return Type::error();
    }
    e.constant = f.value;
  }
  return r;
}

// LBRACK (expr (COMMA expr)* COMMA?)? RBRACK  # listLiteral
Type Checker::check_list(ListExpr& e) {
  std::vector<Type> items;
  for (auto& x : e.items) items.push_back(check(*x));
  if (items.empty()) {
    Type t = Type::tensor(DType::I64, {0});
    t.weak = true;
    e.constant = Value::make_list();
    return t;
  }
  Type acc;
  bool weak = true;
  for (size_t i = 0; i < items.size(); ++i) {
    const Type& t = items[i];
    if (t.is_error()) return t;
    if (!t.is_tensor()) {
      diags().report(DiagKind::type_mismatch, e.items[i]->range,
                     fmt::format("list items must be tensors, not {}", type_to_string(t)));
      return Type::error();
    }
    if (i == 0) {
      acc = t;
      weak = t.weak;
      continue;
    }
    if (t.shape != acc.shape) {
      auto& diag = diags().report(
          DiagKind::shape_mismatch, e.items[i]->range,
          fmt::format("list item {} is {} but the first item is {}", i, type_to_string(t), type_to_string(acc)));
      diag.help = "all items of a list must have the same shape";
      return Type::error();
    }
    auto p = promote(acc.dtype, acc.weak, t.dtype, t.weak);
    if (!p) {
      diags().report(
          DiagKind::type_mismatch, e.items[i]->range,
          fmt::format("list item {} is {}, which does not mix with {}", i, type_to_string(t), type_to_string(acc)));
      return Type::error();
    }
    acc.dtype = p->dtype;
    acc.weak = p->weak;
    weak = weak && t.weak;
  }
  std::vector<int64_t> shape{static_cast<int64_t>(items.size())};
  shape.insert(shape.end(), acc.shape.begin(), acc.shape.end());
  Type r = Type::tensor(acc.dtype, shape);
  r.weak = weak;
  bool all_const = std::all_of(e.items.begin(), e.items.end(), [](auto& x) { return x->constant.has_value(); });
  if (all_const) {
    Value v = Value::make_list();
    v.dtype = acc.dtype;
    for (auto& x : e.items)
      v.items.push_back(x->constant->kind == Value::List ? *x->constant : convert_value(*x->constant, acc.dtype));
    e.constant = v;
  }
  return r;
}

// LBRACE recordField (COMMA recordField)* COMMA? RBRACE  # recordLiteral
Type Checker::check_record(RecordExpr& e) {
  std::vector<Field> fields;
  std::set<std::string> seen;
  bool failed = false;
  for (RecordFieldSyntax& f : e.fields) {
    Type t;
    if (f.value) {
      t = check(*f.value);
    } else {
      // `{ board }` is `{ board: board }`: check the name as an expression of its own.
      NameExpr n;
      n.name = f.name;
      n.range = f.name_range;
      t = check(n);
      if (n.target.kind != Binding::None) {
        program_.shorthand_bindings.push_back(n.target);
        f.shorthand_target = &program_.shorthand_bindings.back();
      }
    }
    if (!seen.insert(f.name).second) {
      diags().report(DiagKind::duplicate_definition, f.name_range, fmt::format("field `{}` is given twice", f.name));
      failed = true;
    }
    if (t.is_error()) {
      failed = true;
      continue;
    }
    if (!t.is_tensor()) {
      diags().report(DiagKind::type_mismatch, f.value ? f.value->range : f.name_range,
                     fmt::format("field `{}` must be a tensor, not {}", f.name, type_to_string(t)));
      failed = true;
      continue;
    }
    t.weak = false;
    fields.push_back(Field{f.name, std::make_shared<const Type>(t)});
  }
  if (failed) return Type::error();
  return Type::record(std::move(fields));
}

// block : LBRACE (stmt SEMI?)* expr SEMI? RBRACE ;
Type Checker::check_block(BlockExpr& e) {
  push_scope();
  for (Stmt& s : e.stmts) {
    Type t = check(*s.value);
    auto& names = scopes_.back().names;
    auto prev = names.find(s.name);
    if (prev != names.end() && !prev->second.used && options_.warnings)
      diags().report(DiagKind::unused_binding, prev->second.binding.def_range,
                     fmt::format("`{}` is replaced before it is used", s.name));
    if (prev == names.end() && options_.warnings && scopes_.size() > 1) {
      if (lookup_local(s.name) == nullptr && program_.global(s.name) &&
          program_.global(s.name)->kind != DeclKind::Import) {
        auto& diag = diags().report(
            DiagKind::shadowed_name, s.name_range,
            fmt::format("`{}` hides the {} of the same name", s.name, decl_kind_name(program_.global(s.name)->kind)));
        diag.notes.push_back({program_.global(s.name)->name_range, "declared here"});
      }
    }
    Local l;
    l.binding = Binding{Binding::Local, s.name, s.name_range, nullptr, &s};
    l.type = t;
    l.value = s.value->constant;
    names[s.name] = l;
  }
  Type r = check(*e.result);
  e.constant = e.result->constant;
  pop_scope(options_.warnings);
  return r;
}

// lambdaParams FATARROW (block | expr)  # lambdaExpr
Type Checker::check_lambda(LambdaExpr& lambda, const std::vector<Type>& param_types) {
  if (lambda.params.size() != param_types.size()) {
    diags().report(DiagKind::type_mismatch, lambda.range,
                   fmt::format("this function takes {} parameter{} but is called with {}", lambda.params.size(),
                               lambda.params.size() == 1 ? "" : "s", param_types.size()));
    return Type::error();
  }
  CheckContext saved = ctx_;
  ctx_ = CheckContext::MapBody;
  push_scope();
  for (size_t i = 0; i < lambda.params.size(); ++i) {
    Local l;
    l.binding = Binding{Binding::LambdaParam, lambda.params[i], lambda.param_ranges[i], nullptr, nullptr};
    l.type = param_types[i];
    l.used = true;
    scopes_.back().names[lambda.params[i]] = l;
  }
  lambda.param_types = param_types;
  Type r = check(*lambda.body);
  pop_scope(options_.warnings);
  ctx_ = saved;
  lambda.type = r;
  return r;
}

}  // namespace pipec

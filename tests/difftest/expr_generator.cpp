#include "tests/difftest/expr_generator.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/sema/builtins.h"
#include "compiler/sema/promotion.h"
#include "runtime/plan/op_kind.h"

namespace pipec::difftest {

namespace {

// Tensors stay small so hundreds of cases run in seconds.
constexpr int64_t kMaxElements = 96;
constexpr size_t kMaxRank = 4;

DType float_of(DType t) { return is_float(t) ? t : DType::F32; }

std::string name(DType t) { return std::string(dtype_name(t)); }

// The ops a spec calls by name (they have an Op builtin) whose row in runtime/plan/ops.def has every
// flag of `all` and none of `none`, in the table's order: an op added to the table with these flags is
// generated without touching this file.
std::vector<OpKind> callable_ops(uint32_t all, uint32_t none) {
  std::vector<OpKind> out;
  for (OpKind k : all_op_kinds) {
    const OpInfo& info = op_info(k);
    if ((info.flags & all) == all && (info.flags & none) == 0 && find_builtin(info.name, {BuiltinKind::Op}))
      out.push_back(k);
  }
  if (out.empty()) throw std::logic_error("difftest generator: the op table has no callable op with these flags");
  return out;
}

std::string call_name(OpKind k) { return std::string(op_name(k)); }

bool fits(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= std::max<int64_t>(d, 1);
  return n <= kMaxElements && shape.size() <= kMaxRank;
}

}  // namespace

std::string ExprGenerator::literal_int() {
  static const std::vector<std::string> v = {"0", "1", "2", "3", "5", "7", "-1", "-3", "100", "255", "-128", "1000"};
  return rng_.pick(v);
}

std::string ExprGenerator::literal_float() {
  static const std::vector<std::string> v = {"0.5", "1.5", "-2.25", "3.0", "0.1", "1e-3", "-7.5", "100.0", "1e10"};
  return rng_.pick(v);
}

GExpr ExprGenerator::cast(GExpr x, DType to) {
  if (x.type.dtype == to) return x;
  return {name(to) + "(" + x.text + ")", {to, x.type.shape}, x.constant};
}

// A constant tensor written as a (nested) list literal under a cast: `i16([[1, -3], [7, 0]])`.
GExpr ExprGenerator::constant_tensor(const std::vector<int64_t>& shape) {
  DType dt = rng_.pick(all_numeric_dtypes());
  bool floats = is_float(dt) && rng_.chance(0.7);
  std::function<std::string(size_t)> build = [&](size_t axis) -> std::string {
    if (axis == shape.size()) return floats ? literal_float() : literal_int();
    std::string s = "[";
    for (int64_t i = 0; i < shape[axis]; ++i) s += (i ? ", " : "") + build(axis + 1);
    return s + "]";
  };
  return {name(dt) + "(" + build(0) + ")", {dt, shape}, true};
}

// random_uniform / random_normal / random_int with a fixed seed; some calls give only `hi` or only
// `std`, the forms that once lowered as `lo` / `mean`.
GExpr ExprGenerator::random_op(const std::vector<int64_t>& shape) {
  std::string s = shape_literal(shape);
  std::string seed = std::to_string(rng_.range(0, 1000));
  switch (rng_.range(0, 5)) {
    case 0: return {fmt::format("random_uniform({}, seed = {})", s, seed), {DType::F32, shape}};
    case 1: return {fmt::format("random_uniform({}, hi = 5.0, seed = {})", s, seed), {DType::F32, shape}};
    case 2: return {fmt::format("random_uniform({}, f64(-2.0), f64(3.0), seed = {})", s, seed), {DType::F64, shape}};
    case 3: return {fmt::format("random_normal({}, std = 3.0, seed = {})", s, seed), {DType::F32, shape}};
    case 4: return {fmt::format("random_normal({}, 1.0, 0.5)", s), {DType::F32, shape}};  // run seed
    default: return {fmt::format("random_int({}, -50, 50, seed = {})", s, seed), {DType::I64, shape}};
  }
}

GExpr ExprGenerator::scalar_leaf() {
  std::vector<const GBinding*> scalars;
  for (const GBinding& b : env_)
    if (b.type.shape.empty()) scalars.push_back(&b);
  int64_t k = rng_.range(0, 5);
  if (k == 0 && !scalars.empty()) {
    const GBinding* b = scalars[static_cast<size_t>(rng_.range(0, static_cast<int64_t>(scalars.size()) - 1))];
    return {b->ref, b->type};
  }
  if (k == 1) return random_op({});
  DType dt = rng_.pick(all_numeric_dtypes());
  std::string v = is_float(dt) && rng_.chance(0.5) ? literal_float() : literal_int();
  return {name(dt) + "(" + v + ")", {dt, {}}, true};
}

// A scalar the checker cannot fold: a scalar field of the element, or a random integer (a block
// binding may hold a constant, and a constant bound or index is checked at compile time).
std::string ExprGenerator::runtime_scalar() {
  std::vector<const GBinding*> fields;
  for (const GBinding& b : env_)
    if (b.type.shape.empty() && b.type.dtype != DType::Bytes && b.ref.rfind("r.", 0) == 0) fields.push_back(&b);
  if (!fields.empty() && rng_.chance(0.7))
    return fields[static_cast<size_t>(rng_.range(0, static_cast<int64_t>(fields.size()) - 1))]->ref;
  return fmt::format("random_int([], -1000, 1000, seed = {})", rng_.range(0, 1000));
}

GExpr ExprGenerator::leaf(const std::vector<int64_t>& shape) {
  std::vector<const GBinding*> same;
  for (const GBinding& b : env_)
    if (b.type.shape == shape) same.push_back(&b);
  if (batched_ || (!same.empty() && rng_.chance(0.7))) {
    if (same.empty()) throw std::logic_error("difftest generator: no binding of the wanted shape in a batched body");
    const GBinding* b = same[static_cast<size_t>(rng_.range(0, static_cast<int64_t>(same.size()) - 1))];
    return {b->ref, b->type};
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n <= 8 && rng_.chance(0.3)) return constant_tensor(shape);
  // A binding with the same number of elements, reshaped.
  for (const GBinding& b : env_)
    if (b.type.known() && b.type.elements() == n && !b.type.shape.empty() && !shape.empty() && rng_.chance(0.5))
      return {fmt::format("reshape({}, {})", b.ref, shape_literal(shape)), {b.type.dtype, shape}};
  return random_op(shape);
}

GExpr ExprGenerator::unary(GExpr x) {
  GExpr r = unary_of(x);
  r.constant = x.constant;
  return r;
}

GExpr ExprGenerator::unary_of(const GExpr& x) {
  DType t = x.type.dtype;
  switch (rng_.range(0, 7)) {
    case 0: return cast(x, rng_.pick(all_numeric_dtypes()));
    case 1: {
      // Unary math defined on every numeric dtype keeps it (bool computes as i64).
      static const std::vector<OpKind> same =
          callable_ops(OpFlag::UnaryMath, OpFlag::FloatOnly | OpFlag::IntegerOnly | OpFlag::Bitwise);
      DType r = t == DType::Bool ? DType::I64 : t;
      return {call_name(rng_.pick(same)) + "(" + x.text + ")", {r, x.type.shape}};
    }
    case 2:
    case 3: {
      // Float math: integers compute in f32.
      static const std::vector<OpKind> fl = callable_ops(OpFlag::UnaryMath | OpFlag::FloatOnly, 0);
      return {call_name(rng_.pick(fl)) + "(" + x.text + ")", {float_of(t), x.type.shape}};
    }
    case 4:
      if (t == DType::Bool) return {"(!" + x.text + ")", x.type};
      return {"(-" + x.text + ")", x.type};
    case 5:
      if (is_integer(t)) return {"(~" + x.text + ")", x.type};
      return cast(x, DType::I32);
    case 6: {
      // clip with typed bounds: the result keeps x's dtype.
      if (t == DType::Bool) return cast(x, DType::U8);
      return {fmt::format("clip({}, {}, {})", x.text, literal_int(), "1000"), x.type};
    }
    default: return cast(x, rng_.pick(field_dtypes()));
  }
}

GExpr ExprGenerator::binary(const std::vector<int64_t>& shape, int depth) {
  GExpr a = shaped(shape, depth - 1);
  GExpr b;
  bool weak = false;
  int64_t form = rng_.range(0, 9);
  if (form < 5) {
    b = shaped(shape, depth - 1);
  } else if (form < 8) {
    b = scalar_leaf();
  } else {
    // A weak literal adopts the other operand's dtype (a float literal with integers gives f32); an
    // integer literal meeting a bool becomes a bool (`(x > 0) == 2` compares with true), but bool
    // arithmetic computes in i64 with the literal's value (`(x > 0) + 2` is 2 or 3).
    weak = true;
    int64_t k = rng_.range(0, 9);
    if (k < 2) b = {rng_.chance(0.5) ? "true" : "false", {DType::Bool, {}}, true};
    else if (k < 5) b = {literal_float(), {DType::F64, {}}, true};
    else b = {literal_int(), {DType::I64, {}}, true};
  }
  if (a.constant && b.constant) {
    b = random_op(b.type.shape);
    weak = false;
  }
  bool a_weak = false, b_weak = weak;
  if (rng_.chance(0.5)) {
    std::swap(a, b);
    std::swap(a_weak, b_weak);
  }
  auto p = promote(a.type.dtype, a_weak, b.type.dtype, b_weak);
  if (!p) return a_weak ? b : a;
  DType pd = p->dtype;
  // `&&` and `||` take bools only: a number literal that becomes a bool beside one is still refused.
  const bool both_bool = a.type.dtype == DType::Bool && b.type.dtype == DType::Bool;
  std::vector<int64_t> rs = a.type.shape.size() >= b.type.shape.size() ? a.type.shape : b.type.shape;
  auto bin = [&](const char* op, DType r) { return GExpr{fmt::format("({} {} {})", a.text, op, b.text), {r, rs}}; };
  auto call = [&](const char* fn, DType r) { return GExpr{fmt::format("{}({}, {})", fn, a.text, b.text), {r, rs}}; };
  DType arith = pd == DType::Bool ? DType::I64 : pd;
  switch (rng_.range(0, 13)) {
    case 0: return bin("+", arith);
    case 1: return bin("-", arith);
    case 2: return bin("*", arith);
    case 3: return bin("/", true_division_dtype(pd));
    case 4: return bin("//", arith);
    case 5: return bin("%", arith);
    case 6: {
      static const char* cmp[] = {"==", "!=", "<", "<=", ">", ">="};
      if (rng_.chance(0.3)) {
        // A comparison of a comparison, with the parentheses the checker requires (`a < b < c` is a
        // chain it refuses): the bool meets a number, a bool or a literal.
        const int64_t k = rng_.range(0, 2);
        const std::string c = k == 0             ? scalar_leaf().text
                              : k == 1           ? literal_int()
                              : rng_.chance(0.5) ? "true"
                                                 : "false";
        return GExpr{fmt::format("(({} {} {}) {} {})", a.text, cmp[rng_.range(0, 5)], b.text, cmp[rng_.range(0, 5)], c),
                     {DType::Bool, rs}};
      }
      return bin(cmp[rng_.range(0, 5)], DType::Bool);
    }
    case 7:
      if (is_integer(pd) || pd == DType::Bool) return bin(rng_.chance(0.5) ? "&" : "^", pd);
      return call("max", pd);
    case 8:
      if (is_integer(pd)) return bin(rng_.chance(0.5) ? "<<" : ">>", pd);
      if (pd == DType::Bool) return bin("!=", DType::Bool);
      return call("min", pd);
    case 9:
      if (both_bool) return bin(rng_.chance(0.5) ? "&&" : "||", DType::Bool);
      if (pd == DType::Bool) return bin(rng_.chance(0.5) ? "<" : ">=", DType::Bool);
      return call(rng_.chance(0.5) ? "max" : "min", pd);
    case 10:
      if (is_integer(pd) || pd == DType::Bool) return call(rng_.chance(0.5) ? "bit_or" : "bit_xor", pd);
      return call("atan2", float_of(pd));
    case 11: {
      if (pd == DType::Bool) return bin("==", DType::Bool);
      return call("pow", pd);
    }
    default: {
      // where(cond, a, b): cond of the result's shape, or a scalar.
      GExpr c = rng_.chance(0.7) ? shaped(rs, depth - 1) : scalar_leaf();
      std::string cond = c.type.dtype == DType::Bool ? c.text : fmt::format("({} > {})", c.text, literal_int());
      return GExpr{fmt::format("where({}, {}, {})", cond, a.text, b.text), {pd, rs}};
    }
  }
}

GExpr ExprGenerator::shape_op(GExpr x, int depth) {
  GExpr r = shape_op_of(x, depth);
  // A concat or stack with a non-constant second item has already cleared the flag.
  if (r.text != x.text && r.text.find("concat(") != 0 && r.text.find("stack(") != 0) r.constant = x.constant;
  return r;
}

GExpr ExprGenerator::shape_op_of(const GExpr& x, int depth) {
  const std::vector<int64_t>& s = x.type.shape;
  int64_t rank = static_cast<int64_t>(s.size());
  DType t = x.type.dtype;
  for (int attempt = 0; attempt < 4; ++attempt) {
    switch (rng_.range(0, 13)) {
      case 0:  // a single index (negative counts from the end)
        if (rank >= 1) {
          int64_t i = rng_.range(-s[0], s[0] - 1);
          return {fmt::format("{}[{}]", x.text, i), {t, {s.begin() + 1, s.end()}}};
        }
        break;
      case 1:  // a slice with a step, maybe negative
        if (rank >= 1) {
          int64_t a = rng_.range(0, s[0] - 1), b = rng_.range(a + 1, s[0]);
          int64_t step = rng_.pick(std::vector<int64_t>{1, 1, 2, 3});
          if (rng_.chance(0.3))
            return {fmt::format("{}[::-{}]", x.text, step), {t, [&] {
                                                               auto r = s;
                                                               r[0] = (s[0] + step - 1) / step;
                                                               return r;
                                                             }()}};
          auto r = s;
          r[0] = (b - a + step - 1) / step;
          return {fmt::format("{}[{}:{}:{}]", x.text, a, b, step), {t, r}};
        }
        break;
      case 2:  // ... and a last-axis index
        if (rank >= 2) {
          int64_t j = rng_.range(0, s.back() - 1);
          return {fmt::format("{}[..., {}]", x.text, j), {t, {s.begin(), s.end() - 1}}};
        }
        break;
      case 3:  // gather with constant indices on the first or second axis
        if (rank >= 1) {
          int64_t axis = rank >= 2 && rng_.chance(0.5) ? 1 : 0;
          int64_t n = rng_.range(1, 5);
          std::string idx = "[";
          for (int64_t k = 0; k < n; ++k) idx += (k ? ", " : "") + std::to_string(rng_.range(-s[axis], s[axis] - 1));
          idx += "]";
          auto r = s;
          r[axis] = n;
          if (!fits(r)) break;
          std::string text = axis == 0 ? fmt::format("{}[{}]", x.text, idx) : fmt::format("{}[:, {}]", x.text, idx);
          return {text, {t, r}};
        }
        break;
      case 4:  // reshape: flatten, or split the element count into two dimensions
        if (rank >= 1) {
          int64_t n = x.type.elements();
          if (rng_.chance(0.5) || n < 2) return {fmt::format("reshape({}, [-1])", x.text), {t, {n}}};
          for (int64_t f = 2; f <= n; ++f)
            if (n % f == 0) return {fmt::format("reshape({}, [{}, -1])", x.text, f), {t, {f, n / f}}};
        }
        break;
      case 5:  // transpose
        if (rank >= 2) {
          std::vector<int64_t> perm(static_cast<size_t>(rank));
          std::iota(perm.begin(), perm.end(), 0);
          std::shuffle(perm.begin(), perm.end(), std::mt19937_64(rng_.bits()));
          std::vector<int64_t> r;
          for (int64_t p : perm) r.push_back(s[static_cast<size_t>(p)]);
          return {fmt::format("transpose({}, {})", x.text, shape_literal(perm)), {t, r}};
        }
        break;
      case 6: {  // expand_dims / squeeze
        if (rng_.chance(0.5) && rank < static_cast<int64_t>(kMaxRank)) {
          int64_t axis = rng_.range(0, rank);
          auto r = s;
          r.insert(r.begin() + axis, 1);
          return {fmt::format("expand_dims({}, {})", x.text, axis), {t, r}};
        }
        std::vector<int64_t> r;
        for (int64_t d : s)
          if (d != 1) r.push_back(d);
        if (r.size() != s.size()) return {fmt::format("squeeze({})", x.text), {t, r}};
        break;
      }
      case 7: {  // concat / stack with a second operand of the same shape, cast to x's dtype
        if (rank == 0) break;
        GExpr y = cast(shaped(s, depth - 1), t);
        int64_t axis = rng_.range(0, rank - 1);
        auto r = s;
        if (rng_.chance(0.5)) {
          r[static_cast<size_t>(axis)] *= 2;
          if (!fits(r)) break;
          return {fmt::format("concat([{}, {}], axis = {})", x.text, y.text, axis), {t, r}, x.constant && y.constant};
        }
        r.insert(r.begin() + axis, 2);
        if (!fits(r)) break;
        return {fmt::format("stack([{}, {}], axis = {})", x.text, y.text, axis), {t, r}, x.constant && y.constant};
      }
      case 8:
      case 9: {  // reductions, over everything or one axis
        static const std::vector<OpKind> red = callable_ops(OpFlag::Reduction, 0);
        const OpKind op = rng_.pick(red);
        const std::string fn(op_name(op));
        const bool argmax = op == OpKind::Argmax;  // needs an axis; gives indices
        GExpr in = x;
        // Bool reductions other than sum and mean are left out: cast to u8 first.
        if (t == DType::Bool && op != OpKind::Sum && op != OpKind::Mean) in = cast(x, DType::U8);
        DType r = in.type.dtype;
        if (op == OpKind::Mean) r = float_of(r);
        if (op == OpKind::Sum && r == DType::Bool) r = DType::I64;
        if (argmax) r = DType::I64;
        if (rank >= 1 && (argmax || rng_.chance(0.6))) {
          int64_t axis = rng_.range(-rank, rank - 1);
          auto rs = s;
          rs.erase(rs.begin() + (axis < 0 ? axis + rank : axis));
          return {fmt::format("{}({}, {})", fn, in.text, axis), {r, rs}};
        }
        if (argmax) break;
        return {fmt::format("{}({})", fn, in.text), {r, {}}};
      }
      case 10:  // unpack_bits / pack_bits
        if (rank >= 1) {
          auto r = s;
          if (s.back() % 8 == 0 && rng_.chance(0.5)) {
            r.back() /= 8;
            return {fmt::format("pack_bits({})", x.text), {DType::U8, r}};
          }
          r.back() *= 8;
          if (!fits(r)) break;
          return {fmt::format("unpack_bits(u8({}))", x.text), {DType::U8, r}};
        }
        break;
      case 11:  // an index computed at run time, always in range: negative ones count from the end
        if (rank >= 1) {
          const int64_t axis = rank >= 2 && rng_.chance(0.4) ? rng_.range(1, rank - 1) : 0;
          const int64_t n = s[static_cast<size_t>(axis)];
          const DType it = rng_.pick(std::vector<DType>{DType::I64, DType::I32, DType::I8, DType::U8, DType::U64});
          // Unsigned: [0, n); signed: [-n, n).
          const std::string i = is_signed_int(it)
                                    ? fmt::format("{}((i64({}) % {}) - {})", name(it), runtime_scalar(), 2 * n, n)
                                    : fmt::format("{}(i64({}) % {})", name(it), runtime_scalar(), n);
          std::string items;
          for (int64_t d = 0; d < axis; ++d) items += ":, ";
          auto r = s;
          r.erase(r.begin() + axis);
          return {fmt::format("{}[{}{}]", x.text, items, i), {t, r}};
        }
        break;
      case 12:  // a slice with bounds computed at run time (a `?` dimension), reduced to a known shape
        if (rank >= 1) {
          auto bound = [&](int64_t spread) {
            return fmt::format("((i64({}) % {}) - {})", runtime_scalar(), 2 * spread + 1, spread);
          };
          const int64_t n = s[0];
          std::string start = rng_.chance(0.7) ? bound(n + 2) : "", stop = rng_.chance(0.7) ? bound(n + 2) : "";
          std::string step;
          if (rng_.chance(0.4))
            step = fmt::format(":{}(i64({}) % 3 + 1)", rng_.chance(0.5) ? "-" : "", runtime_scalar());
          if (start.empty() && stop.empty() && step.empty()) start = bound(n + 2);
          const std::string sliced = fmt::format("{}[{}:{}{}]", x.text, start, stop, step);
          if (rng_.chance(0.25)) return {fmt::format("size({})", sliced), {DType::I64, {}}};
          // sum, prod or mean over every axis or over the sliced one (the others keep their sizes);
          // prod of bools is left out (cast to u8 first), as the reductions above do.
          const std::string fn = rng_.pick(std::vector<std::string>{"sum", "prod", "mean"});
          std::string in = sliced;
          DType r = t;
          if (t == DType::Bool && fn == "prod") in = fmt::format("u8({})", sliced), r = DType::U8;
          if (fn == "mean") r = float_of(r);
          if (fn == "sum" && r == DType::Bool) r = DType::I64;
          if (rng_.chance(0.5)) return {fmt::format("{}({}, 0)", fn, in), {r, {s.begin() + 1, s.end()}}};
          return {fmt::format("{}({})", fn, in), {r, {}}};
        }
        break;
      default: {  // one_hot of integer indices
        auto r = s;
        int64_t depth_n = rng_.range(2, 5);
        r.push_back(depth_n);
        if (!fits(r)) break;
        DType dt = rng_.pick(std::vector<DType>{DType::F32, DType::U8, DType::I32});
        return {fmt::format("one_hot(i64({}), {}, dtype = {})", x.text, depth_n, name(dt)), {dt, r}};
      }
    }
  }
  return x;
}

GExpr ExprGenerator::shaped(const std::vector<int64_t>& shape, int depth) {
  if (depth <= 0 || rng_.chance(0.25)) return leaf(shape);
  if (rng_.chance(0.35)) return unary(shaped(shape, depth - 1));
  return binary(shape, depth);
}

GExpr ExprGenerator::any(int depth) {
  // Start from the shape of something in scope (or a fresh small shape), then maybe change it.
  std::vector<int64_t> shape;
  if (!env_.empty() && (batched_ || rng_.chance(0.7))) {
    shape = rng_.pick(env_).type.shape;
  } else {
    int64_t rank = rng_.range(0, 3);
    for (int64_t i = 0; i < rank; ++i) shape.push_back(rng_.range(1, 4));
  }
  GExpr e = shaped(shape, depth);
  if (batched_) return e;
  int64_t ops = rng_.range(0, 2);
  for (int64_t i = 0; i < ops; ++i) {
    GExpr next = shape_op(e, depth - 1);
    if (fits(next.type.shape)) e = next;
  }
  if (rng_.chance(0.3)) e = unary(e);
  return e;
}

// An operand of a mix: a weak literal (the same text in both twins) or a typed constant, `u8(256)`,
// whose twin computes the same value from a run-time zero, `u8(256 - z)`. The values cross the
// dtypes' ranges (256 wraps in u8, 70000.5 saturates in i16) and the bools' (2 becomes true).
ExprGenerator::MixOperand ExprGenerator::mix_operand(const std::string& zero) {
  static const std::vector<std::string> ints = {"0", "1", "2", "3", "-1", "-3", "255", "256", "-129", "1000", "65535"};
  static const std::vector<std::string> floats = {"0.5", "-0.5", "2.5", "0.1", "-7.25", "1000.5", "70000.5", "-0.0"};
  const int64_t literal = rng_.range(0, 5);  // 0, 1: a bool; 2: a float; 3, 4, 5: an integer
  const std::string v = literal < 2    ? (rng_.chance(0.5) ? "true" : "false")
                        : literal == 2 ? rng_.pick(floats)
                                       : rng_.pick(ints);
  if (rng_.chance(0.5)) {
    const DType t = literal < 2 ? DType::Bool : literal == 2 ? DType::F64 : DType::I64;
    return {v, v, t, true};
  }
  const DType t = rng_.chance(0.4) ? DType::Bool : rng_.pick(all_numeric_dtypes());
  std::string computed;
  if (literal < 2) computed = fmt::format("{}({} {} 0)", name(t), zero, v == "true" ? "==" : "!=");
  // `v - zero`, not `zero + v`: -0.0 - 0.0 is -0.0, but 0.0 + -0.0 is 0.0.
  else if (literal == 2) computed = fmt::format("{}({} - f64({}))", name(t), v, zero);
  else computed = fmt::format("{}({} - {})", name(t), v, zero);
  return {name(t) + "(" + v + ")", computed, t, false};
}

GTwins ExprGenerator::mix_twins() {
  // Zero, but not a constant: the checker cannot fold what is made from it.
  const std::string zero = fmt::format("(i64({}) * 0)", runtime_scalar());
  for (;;) {
    MixOperand a = mix_operand(zero), b = mix_operand(zero);
    if (a.dtype != DType::Bool && b.dtype != DType::Bool) continue;  // a bool meets a number or a bool
    if (a.weak && b.weak) {
      // Two literals exist only as constants. Their computed twin turns a bool literal into a bool
      // computed at run time: an integer literal meets a bool the same way then (it becomes a bool in
      // comparisons and bit ops), but a float literal would make the run-time side f32, not f64.
      if (a.dtype == DType::F64 || b.dtype == DType::F64) continue;
      MixOperand& x = a.dtype == DType::Bool ? a : b;
      x.computed = fmt::format("({} {} 0)", zero, x.folded == "true" ? "==" : "!=");
    }
    auto p = promote(a.dtype, a.weak, b.dtype, b.weak);
    if (!p) continue;
    const DType pd = p->dtype;
    const DType arith = pd == DType::Bool ? DType::I64 : pd;
    struct Op {
      const char* text;
      bool call;
      DType result;
    };
    std::vector<Op> ops = {{"==", false, DType::Bool}, {"!=", false, DType::Bool}, {"<", false, DType::Bool},
                           {"<=", false, DType::Bool}, {">", false, DType::Bool},  {">=", false, DType::Bool},
                           {"+", false, arith},        {"-", false, arith},        {"*", false, arith},
                           {"max", true, pd},          {"min", true, pd}};
    if (is_integer(pd) || pd == DType::Bool) {
      ops.push_back({"&", false, pd});
      ops.push_back({"^", false, pd});
    }
    if (a.dtype == DType::Bool && b.dtype == DType::Bool) {
      ops.push_back({"&&", false, DType::Bool});
      ops.push_back({"||", false, DType::Bool});
    }
    const Op& op = rng_.pick(ops);
    auto write = [&](const std::string& x, const std::string& y) {
      std::string e = op.call ? fmt::format("{}({}, {})", op.text, x, y) : fmt::format("({} {} {})", x, op.text, y);
      // bf16 cannot be written to .npy: such a field is converted (exactly) to f32.
      return op.result == DType::BF16 ? "f32(" + e + ")" : e;
    };
    DType result = op.result == DType::BF16 ? DType::F32 : op.result;
    return {write(a.folded, b.folded), write(a.computed, b.computed), {result, {}}};
  }
}

GExpr ExprGenerator::predicate(int depth) {
  GExpr e = any(depth);
  switch (rng_.range(0, 2)) {
    case 0: return {fmt::format("(sum(i64({})) % {} != 0)", e.text, rng_.range(2, 4)), {DType::Bool, {}}};
    case 1: return {fmt::format("(reduce_max(f64({})) > {})", e.text, literal_float()), {DType::Bool, {}}};
    default: return {fmt::format("(reduce_min(i32({})) <= {})", e.text, literal_int()), {DType::Bool, {}}};
  }
}

}  // namespace pipec::difftest

// The vector-Jacobian product of an expression-IR function, one gradient rule per op (rule_of below).
//
// Rules follow TensorFlow's gradients where a choice exists: max/min send the gradient to the first
// operand on ties, reduce_max/reduce_min share it equally between tied elements, clip passes it where
// lo <= x <= hi, relu passes it where x > 0, and floor, ceil, round, sign and floordiv have zero
// gradient. A rule sees the forward values (recomputed in the VJP function) and the adjoint of the
// result, and adds a contribution to each float operand on the gradient's path, summed over the
// dimensions that operand was broadcast along.
#include "compiler/train/expr_gradients.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "runtime/core/tensor.h"

namespace pipec {

namespace {

Shape broadcast(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Value int_list(const std::vector<int64_t>& v) {
  Value out = Value::make_list();
  for (int64_t x : v) out.items.push_back(Value::make_int(x));
  return out;
}

class Vjp {
 public:
  Vjp(const ExprFunction& f) : f_(f), map_(f.body.size(), -1), adj_(f.body.size(), -1) {}

  const ExprFunction& f_;
  ExprFunction out_;
  std::vector<int> map_;  // forward id -> its recomputation in out_
  std::vector<int> adj_;  // forward id -> its adjoint in out_
  std::vector<bool> needs_;
  SpecLoc loc_;

  const Type& type(int id) const { return out_.body[id].type; }
  DType dtype(int id) const { return type(id).dtype; }
  int fwd(int forward_id) const { return map_[forward_id]; }
  const Instr& instr(int forward_id) const { return f_.body[forward_id]; }
  int operand(int forward_id, size_t k) const { return instr(forward_id).operands.at(k); }

  int emit(OpKind op, std::vector<int> operands, std::map<std::string, Value> attrs, Type t) {
    return out_.add(Instr{op, std::move(operands), std::move(attrs), std::move(t), loc_});
  }
  int cst(double v, DType dt, Shape shape = {}) {
    return emit(OpKind::Const, {}, {{"value", Value::make_float(v, dt)}}, Type::tensor(dt, std::move(shape)));
  }
  int zeros_like(const Type& t) { return cst(0, t.dtype, t.shape); }
  int binary(OpKind op, int a, int b) {
    return emit(op, {a, b}, {}, Type::tensor(dtype(a), broadcast(type(a).shape, type(b).shape)));
  }
  int add(int a, int b) { return binary(OpKind::Add, a, b); }
  int sub(int a, int b) { return binary(OpKind::Sub, a, b); }
  int mul(int a, int b) { return binary(OpKind::Mul, a, b); }
  int div(int a, int b) { return binary(OpKind::Div, a, b); }
  int compare(OpKind op, int a, int b) {
    return emit(op, {a, b}, {}, Type::tensor(DType::Bool, broadcast(type(a).shape, type(b).shape)));
  }
  int unary(OpKind op, int a) { return emit(op, {a}, {}, type(a)); }
  int neg(int a) { return unary(OpKind::Neg, a); }
  int where(int c, int a, int b) {
    return emit(OpKind::Where, {c, a, b}, {},
                Type::tensor(dtype(a), broadcast(type(c).shape, broadcast(type(a).shape, type(b).shape))));
  }
  int scalar(double v, int like) { return cst(v, dtype(like)); }
  int reshape(int a, const Shape& shape) {
    if (type(a).shape == shape) return a;
    return emit(OpKind::Reshape, {a}, {{"shape", int_list(shape)}}, Type::tensor(dtype(a), shape));
  }
  int cast(int a, DType to) {
    if (dtype(a) == to) return a;
    return emit(OpKind::Cast, {a}, {{"dtype", Value::make_symbol(std::string(dtype_name(to)))}},
                Type::tensor(to, type(a).shape));
  }
  int sum(int a, const std::vector<int64_t>& axes) {
    if (axes.empty()) return a;
    Shape s;
    for (int64_t d = 0; d < type(a).rank(); ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) s.push_back(type(a).shape[d]);
    return emit(OpKind::Sum, {a}, {{"axis", int_list(axes)}}, Type::tensor(dtype(a), s));
  }
  int slice(int a, int64_t axis, int64_t start, int64_t stop) {
    const Shape& s = type(a).shape;
    std::vector<int64_t> starts, stops, steps;
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
      starts.push_back(d == axis ? start : 0);
      stops.push_back(d == axis ? stop : s[d]);
      steps.push_back(1);
    }
    Shape r = s;
    r[axis] = stop - start;
    return emit(OpKind::Slice, {a},
                {{"starts", int_list(starts)}, {"stops", int_list(stops)}, {"steps", int_list(steps)}},
                Type::tensor(dtype(a), r));
  }
  int concat(const std::vector<int>& parts, int64_t axis) {
    Shape s = type(parts[0]).shape;
    s[axis] = 0;
    for (int p : parts) s[axis] += type(p).shape[axis];
    return emit(OpKind::Concat, parts, {{"axis", Value::make_int(axis)}}, Type::tensor(dtype(parts[0]), s));
  }
  // `g` (of the broadcast result's shape) summed back to the shape of `to`.
  int unbroadcast(int g, const Shape& to) {
    const Shape& gs = type(g).shape;
    size_t extra = gs.size() - to.size();
    std::vector<int64_t> axes;
    for (size_t d = 0; d < gs.size(); ++d)
      if (d < extra || (to[d - extra] == 1 && gs[d] != 1)) axes.push_back(static_cast<int64_t>(d));
    return reshape(sum(g, axes), to);
  }
  // `g` of a reduction's result, shaped back with ones at the reduced axes, then broadcast to `full`.
  int expand_reduced(int g, const std::vector<int64_t>& axes, const Shape& full) {
    Shape keep = full;
    for (int64_t a : axes) keep[a] = 1;
    return reshape(g, keep);
  }
  void contribute(int forward_operand, int g) {
    if (!needs_[forward_operand]) return;
    const Type& want = f_.body[forward_operand].type;
    g = cast(unbroadcast(g, want.shape), want.dtype);
    adj_[forward_operand] = adj_[forward_operand] < 0 ? g : add(adj_[forward_operand], g);
  }
  bool wants(int forward_id, size_t k) const { return needs_[operand(forward_id, k)]; }
};

using Rule = void (*)(Vjp&, int);

// The axes a reduction instruction reduces (all when it has no `axis`), normalized.
std::vector<int64_t> reduced_axes(const Instr& in, int64_t rank) {
  std::vector<int64_t> axes;
  auto it = in.attrs.find("axis");
  if (it == in.attrs.end() || (it->second.kind == Value::Symbol && it->second.s == "all")) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    return axes;
  }
  auto norm = [&](int64_t a) { return a < 0 ? a + rank : a; };
  if (it->second.kind == Value::List)
    for (const Value& v : it->second.items) axes.push_back(norm(v.i));
  else axes.push_back(norm(it->second.i));
  std::sort(axes.begin(), axes.end());
  return axes;
}

// One rule per op, `nullptr` for the ops without one: every op of runtime/plan/ops.def is listed (no
// `default`), so an op added to the table is a compile error here until its gradient is decided.
// `i` is the forward instruction; v.adj_[i] its adjoint.
Rule rule_of(OpKind op) {
  switch (op) {
    case OpKind::Add:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.adj_[i]);
        v.contribute(v.operand(i, 1), v.adj_[i]);
      };
    case OpKind::Sub:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.adj_[i]);
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.neg(v.adj_[i]));
      };
    case OpKind::Mul:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0)), b = v.fwd(v.operand(i, 1)), g = v.adj_[i];
        if (v.wants(i, 0)) v.contribute(v.operand(i, 0), v.mul(g, b));
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.mul(g, a));
      };
    case OpKind::Div:
      return [](Vjp& v, int i) {
        int b = v.fwd(v.operand(i, 1)), y = v.fwd(i), g = v.adj_[i];
        if (v.wants(i, 0)) v.contribute(v.operand(i, 0), v.div(g, b));
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.neg(v.div(v.mul(g, y), b)));
      };
    case OpKind::Pow:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0)), b = v.fwd(v.operand(i, 1)), y = v.fwd(i), g = v.adj_[i];
        if (v.wants(i, 0))
          v.contribute(v.operand(i, 0), v.mul(g, v.mul(b, v.binary(OpKind::Pow, a, v.sub(b, v.scalar(1, b))))));
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.mul(g, v.mul(y, v.unary(OpKind::Log, a))));
      };
    case OpKind::Max:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0)), b = v.fwd(v.operand(i, 1)), g = v.adj_[i];
        int first = v.compare(OpKind::Ge, a, b), zero = v.scalar(0, g);
        v.contribute(v.operand(i, 0), v.where(first, g, zero));
        v.contribute(v.operand(i, 1), v.where(first, zero, g));
      };
    case OpKind::Min:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0)), b = v.fwd(v.operand(i, 1)), g = v.adj_[i];
        int first = v.compare(OpKind::Le, a, b), zero = v.scalar(0, g);
        v.contribute(v.operand(i, 0), v.where(first, g, zero));
        v.contribute(v.operand(i, 1), v.where(first, zero, g));
      };
    case OpKind::Atan2:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0)), b = v.fwd(v.operand(i, 1)), g = v.adj_[i];
        int r2 = v.add(v.mul(a, a), v.mul(b, b));
        if (v.wants(i, 0)) v.contribute(v.operand(i, 0), v.div(v.mul(g, b), r2));
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.neg(v.div(v.mul(g, a), r2)));
      };
    case OpKind::Mod:
      return [](Vjp& v, int i) {  // a - floor(a / b) * b
        int a = v.fwd(v.operand(i, 0)), b = v.fwd(v.operand(i, 1)), g = v.adj_[i];
        v.contribute(v.operand(i, 0), g);
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.neg(v.mul(g, v.unary(OpKind::Floor, v.div(a, b)))));
      };
    case OpKind::Neg: return [](Vjp& v, int i) { v.contribute(v.operand(i, 0), v.neg(v.adj_[i])); };
    case OpKind::Abs:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.mul(v.adj_[i], v.unary(OpKind::Sign, v.fwd(v.operand(i, 0)))));
      };
    case OpKind::Tanh:
      return [](Vjp& v, int i) {
        int y = v.fwd(i);
        v.contribute(v.operand(i, 0), v.mul(v.adj_[i], v.sub(v.scalar(1, y), v.mul(y, y))));
      };
    case OpKind::Sigmoid:
      return [](Vjp& v, int i) {
        int y = v.fwd(i);
        v.contribute(v.operand(i, 0), v.mul(v.adj_[i], v.mul(y, v.sub(v.scalar(1, y), y))));
      };
    case OpKind::Exp: return [](Vjp& v, int i) { v.contribute(v.operand(i, 0), v.mul(v.adj_[i], v.fwd(i))); };
    case OpKind::Log:
      return [](Vjp& v, int i) { v.contribute(v.operand(i, 0), v.div(v.adj_[i], v.fwd(v.operand(i, 0)))); };
    case OpKind::Log1p:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0));
        v.contribute(v.operand(i, 0), v.div(v.adj_[i], v.add(v.scalar(1, a), a)));
      };
    case OpKind::Sqrt:
      return [](Vjp& v, int i) {
        int y = v.fwd(i);
        v.contribute(v.operand(i, 0), v.div(v.mul(v.adj_[i], v.scalar(0.5, y)), y));
      };
    case OpKind::Rsqrt:
      return [](Vjp& v, int i) {  // d/dx x^-1/2 = -y / (2x)
        int y = v.fwd(i), a = v.fwd(v.operand(i, 0));
        v.contribute(v.operand(i, 0), v.div(v.mul(v.adj_[i], v.mul(y, v.scalar(-0.5, y))), a));
      };
    case OpKind::Sin:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.mul(v.adj_[i], v.unary(OpKind::Cos, v.fwd(v.operand(i, 0)))));
      };
    case OpKind::Cos:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.neg(v.mul(v.adj_[i], v.unary(OpKind::Sin, v.fwd(v.operand(i, 0))))));
      };
    case OpKind::Relu:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0)), g = v.adj_[i];
        v.contribute(v.operand(i, 0), v.where(v.compare(OpKind::Gt, a, v.scalar(0, a)), g, v.scalar(0, g)));
      };
    case OpKind::Square:
      return [](Vjp& v, int i) {
        int a = v.fwd(v.operand(i, 0));
        v.contribute(v.operand(i, 0), v.mul(v.adj_[i], v.mul(a, v.scalar(2, a))));
      };
    // Piecewise constant: zero gradient.
    case OpKind::Sign: return [](Vjp&, int) {};
    case OpKind::Floor: return [](Vjp&, int) {};
    case OpKind::Ceil: return [](Vjp&, int) {};
    case OpKind::Round: return [](Vjp&, int) {};
    case OpKind::FloorDiv: return [](Vjp&, int) {};
    case OpKind::Where:
      return [](Vjp& v, int i) {
        int c = v.fwd(v.operand(i, 0)), g = v.adj_[i], zero = v.scalar(0, g);
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.where(c, g, zero));
        if (v.wants(i, 2)) v.contribute(v.operand(i, 2), v.where(c, zero, g));
      };
    case OpKind::Clip:
      return [](Vjp& v, int i) {
        int x = v.fwd(v.operand(i, 0)), lo = v.fwd(v.operand(i, 1)), hi = v.fwd(v.operand(i, 2)), g = v.adj_[i];
        int zero = v.scalar(0, g);
        if (v.wants(i, 0)) {
          int inside = v.emit(
              OpKind::And, {v.compare(OpKind::Ge, x, lo), v.compare(OpKind::Le, x, hi)}, {},
              Type::tensor(DType::Bool, broadcast(v.type(x).shape, broadcast(v.type(lo).shape, v.type(hi).shape))));
          v.contribute(v.operand(i, 0), v.where(inside, g, zero));
        }
        if (v.wants(i, 1)) v.contribute(v.operand(i, 1), v.where(v.compare(OpKind::Lt, x, lo), g, zero));
        if (v.wants(i, 2)) v.contribute(v.operand(i, 2), v.where(v.compare(OpKind::Gt, x, hi), g, zero));
      };
    case OpKind::Cast:
      return [](Vjp& v, int i) {
        int from = v.operand(i, 0);
        if (is_float(v.instr(from).type.dtype)) v.contribute(from, v.cast(v.adj_[i], v.instr(from).type.dtype));
      };
    case OpKind::Reshape:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.reshape(v.adj_[i], v.instr(v.operand(i, 0)).type.shape));
      };
    case OpKind::ExpandDims:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.reshape(v.adj_[i], v.instr(v.operand(i, 0)).type.shape));
      };
    case OpKind::Squeeze:
      return [](Vjp& v, int i) {
        v.contribute(v.operand(i, 0), v.reshape(v.adj_[i], v.instr(v.operand(i, 0)).type.shape));
      };
    case OpKind::Transpose:
      return [](Vjp& v, int i) {
        const Value& perm = v.instr(i).attrs.at("perm");
        std::vector<int64_t> inverse(perm.items.size());
        for (size_t k = 0; k < perm.items.size(); ++k) inverse[perm.items[k].i] = static_cast<int64_t>(k);
        int g = v.adj_[i];
        int t = v.emit(OpKind::Transpose, {g}, {{"perm", int_list(inverse)}}, v.instr(v.operand(i, 0)).type);
        v.contribute(v.operand(i, 0), t);
      };
    case OpKind::Concat:
      return [](Vjp& v, int i) {
        const Instr& in = v.instr(i);
        int64_t rank = in.type.rank();
        int64_t axis = in.attrs.count("axis") ? in.attrs.at("axis").i : -1;
        if (axis < 0) axis += rank;
        int64_t at = 0;
        for (size_t k = 0; k < in.operands.size(); ++k) {
          int64_t len = v.instr(in.operands[k]).type.shape[axis];
          if (v.wants(i, k)) v.contribute(in.operands[k], v.slice(v.adj_[i], axis, at, at + len));
          at += len;
        }
      };
    case OpKind::Stack:
      return [](Vjp& v, int i) {
        const Instr& in = v.instr(i);
        int64_t rank = in.type.rank();
        int64_t axis = in.attrs.count("axis") ? in.attrs.at("axis").i : 0;
        if (axis < 0) axis += rank;
        for (size_t k = 0; k < in.operands.size(); ++k)
          if (v.wants(i, k))
            v.contribute(in.operands[k],
                         v.reshape(v.slice(v.adj_[i], axis, static_cast<int64_t>(k), static_cast<int64_t>(k) + 1),
                                   v.instr(in.operands[k]).type.shape));
      };
    case OpKind::Slice:
      return [](Vjp& v, int i) {
        const Instr& in = v.instr(i);
        const Shape& full = v.instr(in.operands[0]).type.shape;
        std::vector<int64_t> starts, stops, steps;
        for (const Value& x : in.attrs.at("starts").items) starts.push_back(x.i);
        for (const Value& x : in.attrs.at("stops").items) stops.push_back(x.i);
        for (const Value& x : in.attrs.at("steps").items) steps.push_back(x.i);
        int g = v.adj_[i];
        for (size_t d = 0; d < starts.size(); ++d) {
          if (steps[d] != 1)
            throw NotDifferentiable(i, OpKind::Slice, "a slice with a step other than 1 has no gradient yet");
          int64_t n = full[d];
          int64_t s = starts[d] == INT64_MIN ? 0 : starts[d] < 0 ? starts[d] + n : starts[d];
          int64_t e = stops[d] == INT64_MIN ? n : stops[d] < 0 ? stops[d] + n : stops[d];
          s = std::clamp<int64_t>(s, 0, n);
          e = std::clamp<int64_t>(e, s, n);
          std::vector<int> parts;
          Shape pad = v.type(g).shape;
          if (s > 0) {
            pad[d] = s;
            parts.push_back(v.cst(0, v.dtype(g), pad));
          }
          parts.push_back(g);
          if (e < n) {
            pad[d] = n - e;
            parts.push_back(v.cst(0, v.dtype(g), pad));
          }
          if (parts.size() > 1) g = v.concat(parts, static_cast<int64_t>(d));
        }
        v.contribute(in.operands[0], g);
      };
    case OpKind::Sum:
      return [](Vjp& v, int i) {
        const Shape& full = v.instr(v.operand(i, 0)).type.shape;
        auto axes = reduced_axes(v.instr(i), static_cast<int64_t>(full.size()));
        int g = v.expand_reduced(v.adj_[i], axes, full);
        v.contribute(v.operand(i, 0), v.add(g, v.zeros_like(Type::tensor(v.dtype(g), full))));
      };
    case OpKind::Mean:
      return [](Vjp& v, int i) {
        const Shape& full = v.instr(v.operand(i, 0)).type.shape;
        auto axes = reduced_axes(v.instr(i), static_cast<int64_t>(full.size()));
        int64_t count = 1;
        for (int64_t a : axes) count *= full[a];
        int g = v.expand_reduced(v.adj_[i], axes, full);
        g = v.mul(g, v.scalar(1.0 / static_cast<double>(count), g));
        v.contribute(v.operand(i, 0), v.add(g, v.zeros_like(Type::tensor(v.dtype(g), full))));
      };
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:  // the same rule: equal elements share the gradient
      return [](Vjp& v, int i) {
        const Shape& full = v.instr(v.operand(i, 0)).type.shape;
        auto axes = reduced_axes(v.instr(i), static_cast<int64_t>(full.size()));
        int a = v.fwd(v.operand(i, 0));
        int y = v.expand_reduced(v.fwd(i), axes, full);
        int hit = v.cast(v.compare(OpKind::Eq, a, y), v.dtype(a));
        int count = v.expand_reduced(v.sum(hit, axes), axes, full);
        int g = v.expand_reduced(v.adj_[i], axes, full);
        v.contribute(v.operand(i, 0), v.div(v.mul(hit, g), count));
      };
    // Inputs and constants: the sweep ends at the parameters; a constant needs no gradient.
    case OpKind::Param:
    case OpKind::Const:
    // Integer or bool results never lie on a gradient's path (build_vjp skips them).
    case OpKind::BitAnd:
    case OpKind::BitOr:
    case OpKind::BitXor:
    case OpKind::Shl:
    case OpKind::Shr:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Not:
    case OpKind::BitNot:
    case OpKind::UnpackBits:
    case OpKind::PackBits:
    case OpKind::OneHot:
    case OpKind::Argmax:
    case OpKind::Size:
    // Not written yet: the loss reaching parameters through them is a not_differentiable error.
    case OpKind::Gather:
    case OpKind::Prod:
    case OpKind::DynamicIndex:
    case OpKind::DynamicSlice:
    // Random draws are refused in models (unsupported_in_model); files and images are pipeline work.
    case OpKind::RandomUniform:
    case OpKind::RandomNormal:
    case OpKind::RandomInt:
    case OpKind::ReadFile:
    case OpKind::DecodeJpeg:
    case OpKind::DecodePng:
    case OpKind::DecodeImage:
    case OpKind::EncodePng:
    case OpKind::EncodeJpeg:
    case OpKind::RandomCrop:
    case OpKind::CentralCrop:
    case OpKind::CropOrPad:
    case OpKind::Resize:
    case OpKind::FlipLeftRight:
    case OpKind::FlipUpDown:
    case OpKind::RandomFlipLeftRight:
    case OpKind::RandomFlipUpDown:
    case OpKind::ConvertImageDtype:
    case OpKind::Normalize:
    case OpKind::RgbToGrayscale:
    case OpKind::DistanceTransform:
    case OpKind::OneHotColors:
    case OpKind::ConvertNormalize:
    case OpKind::RandomFlipConvertNormalize:
    case OpKind::Strip:
    case OpKind::Split:
    case OpKind::ToNumber: return nullptr;
  }
  return nullptr;
}

// The forward instructions the gradient does not read are dropped (parameters stay: they are the
// node's inputs).
ExprFunction without_dead_code(ExprFunction f) {
  std::vector<bool> live(f.body.size(), false);
  for (const auto& r : f.results) live[r.second] = true;
  for (size_t i = f.body.size(); i-- > 0;) {
    if (op_has(f.body[i].op, OpFlag::Input)) live[i] = true;
    if (!live[i]) continue;
    for (int o : f.body[i].operands) live[o] = true;
  }
  ExprFunction out;
  out.name = f.name;
  std::vector<int> remap(f.body.size(), -1);
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (!live[i]) continue;
    Instr in = std::move(f.body[i]);
    for (int& o : in.operands) o = remap[o];
    remap[i] = out.add(std::move(in));
  }
  for (auto& [name, id] : f.results) out.results.push_back({name, remap[id]});
  return out;
}

}  // namespace

bool has_expr_gradient_rule(OpKind op) { return rule_of(op) != nullptr; }

std::shared_ptr<ExprFunction> build_vjp(const ExprFunction& fn, const std::vector<bool>& wants,
                                        const std::vector<bool>& has_dy) {
  Vjp v(fn);
  v.out_.name = fn.name + "'";
  std::vector<int> params;
  for (size_t i = 0; i < fn.body.size(); ++i)
    if (op_has(fn.body[i].op, OpFlag::Input)) params.push_back(static_cast<int>(i));
  // Which values lie on the gradient's path: floats computed from a wanted parameter.
  v.needs_.assign(fn.body.size(), false);
  for (size_t k = 0; k < params.size(); ++k)
    v.needs_[params[k]] = k < wants.size() && wants[k] && is_float(fn.body[params[k]].type.dtype);
  for (size_t i = 0; i < fn.body.size(); ++i) {
    const Instr& in = fn.body[i];
    if (op_has(in.op, OpFlag::Input) || !is_float(in.type.dtype)) continue;
    for (int o : in.operands) v.needs_[i] = v.needs_[i] || v.needs_[o];
  }
  // Parameters: the forward's, then one dy per result that has one.
  for (int p : params) v.map_[p] = v.out_.add(fn.body[p]);
  std::vector<int> dys(fn.results.size(), -1);
  for (size_t k = 0; k < fn.results.size(); ++k) {
    if (k >= has_dy.size() || !has_dy[k]) continue;
    const Instr& r = fn.body[fn.results[k].second];
    dys[k] =
        v.out_.add(Instr{OpKind::Param, {}, {{"field", Value::make_string(fmt::format("dy{}", k))}}, r.type, r.loc});
  }
  // The forward computation, recomputed.
  for (size_t i = 0; i < fn.body.size(); ++i) {
    const Instr& in = fn.body[i];
    if (op_has(in.op, OpFlag::Input)) continue;
    Instr copy = in;
    for (int& o : copy.operands) o = v.map_[o];
    v.map_[i] = v.out_.add(std::move(copy));
  }
  for (size_t k = 0; k < fn.results.size(); ++k) {
    if (dys[k] < 0) continue;
    int r = fn.results[k].second;
    if (!v.needs_[r]) continue;
    v.adj_[r] = v.adj_[r] < 0 ? dys[k] : v.add(v.adj_[r], dys[k]);
  }
  // The reverse sweep.
  for (size_t i = fn.body.size(); i-- > 0;) {
    const Instr& in = fn.body[i];
    if (op_has(in.op, OpFlag::Input) || v.adj_[i] < 0 || !v.needs_[i]) continue;
    bool any = false;
    for (int o : in.operands) any = any || v.needs_[o];
    if (!any) continue;
    v.loc_ = in.loc;
    Rule rule = rule_of(in.op);
    if (!rule) throw NotDifferentiable(static_cast<int>(i), in.op, fmt::format("`{}` has no gradient", op_name(in.op)));
    rule(v, static_cast<int>(i));
  }
  for (size_t k = 0; k < params.size(); ++k) {
    if (k >= wants.size() || !wants[k]) continue;
    const Instr& p = fn.body[params[k]];
    int g = v.adj_[params[k]];
    if (g < 0) {
      v.loc_ = p.loc;
      g = v.zeros_like(p.type);
    }
    v.out_.results.push_back({"d" + p.attrs.at("field").s, g});
  }
  return std::make_shared<ExprFunction>(without_dead_code(std::move(v.out_)));
}

}  // namespace pipec

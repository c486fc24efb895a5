#include "compiler/codegen/cuda/cuda_emitter.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/codegen/cuda/cuda_prelude.h"
#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"
#include "runtime/ops/slice_bounds.h"

namespace pipec::cuda_codegen {

namespace {

using Shape = std::vector<int64_t>;

/// Thrown inside the emitter when a body cannot be lowered; becomes CudaEmitResult::error.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const std::set<OpKind> kFloatUnary = {OpKind::Tanh, OpKind::Exp, OpKind::Log, OpKind::Log1p, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Sin, OpKind::Cos, OpKind::Floor, OpKind::Ceil, OpKind::Sigmoid};
const std::set<OpKind> kAnyUnary = {OpKind::Neg, OpKind::Abs, OpKind::Relu, OpKind::Square, OpKind::Sign};
const std::set<OpKind> kArith = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max, OpKind::Min};
const std::set<OpKind> kBitwise = {OpKind::BitAnd, OpKind::BitOr, OpKind::BitXor};
const std::map<OpKind, std::string> kCompare = {{OpKind::Eq, "=="}, {OpKind::Ne, "!="}, {OpKind::Lt, "<"}, {OpKind::Le, "<="}, {OpKind::Gt, ">"}, {OpKind::Ge, ">="}};

std::string ctype(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::U8: return "u8";
    case DType::I8: return "i8";
    case DType::U16: return "u16";
    case DType::I16: return "i16";
    case DType::U32: return "u32";
    case DType::I32: return "i32";
    case DType::U64: return "u64";
    case DType::I64: return "i64";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    default: throw Unsupported(fmt::format("dtype {} has no CUDA lowering yet", dtype_name(t)));
  }
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

/// Coordinate d of flat index `i` in shape `s` (as C text).
std::string coord(const Shape& s, size_t d, const std::string& i) {
  const int64_t stride = strides_of(s)[d];
  std::string q = stride == 1 ? i : fmt::format("({} / {})", i, stride);
  return d == 0 ? q : fmt::format("({} % {})", q, s[d]);
}

/// The flat index into an operand of shape `in` that numpy broadcasting pairs with index `i` of `out`.
std::string broadcast_index(const Shape& out, const Shape& in, const std::string& i) {
  if (in == out) return i;
  if (numel(in) == 1) return "0";
  const Shape in_st = strides_of(in);
  const size_t pad = out.size() - in.size();
  std::string sum;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    std::string term = coord(out, d + pad, i);
    if (in_st[d] != 1) term = fmt::format("{} * {}", term, in_st[d]);
    sum += (sum.empty() ? "" : " + ") + term;
  }
  return sum.empty() ? "0" : "(" + sum + ")";
}

std::string float_literal(double v, bool f32) {
  if (!std::isfinite(v)) {
    if (f32) {
      float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return fmt::format("PIPEC_F32_BITS(0x{:08x}u)", b);
    }
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return fmt::format("PIPEC_F64_BITS(0x{:016x}ull)", b);
  }
  // Hexadecimal floats are exact: the kernel sees the same bits as the interpreter.
  return fmt::format("{:a}{}", v, f32 ? "f" : "");
}

/// Element `k` of a numeric tensor as a C literal of its dtype.
std::string literal(const Tensor& t, int64_t k) {
  switch (t.dtype()) {
    case DType::Bool: return t.data<bool>()[k] ? "true" : "false";
    case DType::F32: return float_literal(t.data<float>()[k], true);
    case DType::F64: return float_literal(t.data<double>()[k], false);
    case DType::U64: return fmt::format("{}ull", t.data<uint64_t>()[k]);
    case DType::I64: {
      int64_t v = t.data<int64_t>()[k];
      if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807ll - 1)";
      return fmt::format("{}ll", v);
    }
    default:
      return visit_numeric(t.dtype(), [&](auto tag) -> std::string {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>)
          return fmt::format("({}){}", ctype(t.dtype()), static_cast<int64_t>(t.data<T>()[k]));
        else
          throw Unsupported("unexpected dtype");
      });
  }
}

/// C text converting `expr` from dtype `from` to `to` with the interpreter's `convert` semantics.
std::string convert_expr(const std::string& expr, DType from, DType to) {
  if (from == to) return expr;
  ctype(from);
  const std::string t = ctype(to);
  if (to == DType::Bool) return fmt::format("(({}) != 0)", expr);
  if (is_float(from) && !is_float(to)) return fmt::format("p_f2i_{}((f64)({}))", t, expr);
  return fmt::format("(({})({}))", t, expr);
}

class Emitter {
 public:
  Emitter(const ExprFunction& fn, const std::vector<std::string>& in_fields, std::string entry)
      : fn_(fn), in_fields_(in_fields), entry_(std::move(entry)) {}

  std::shared_ptr<GpuKernel> run() {
    auto k = std::make_shared<GpuKernel>();
    k->entry = entry_;
    mark_live();
    for (size_t v = 0; v < fn_.body.size(); ++v)
      if (live_[v]) emit_instr(static_cast<int>(v));
    std::string out(cuda_prelude());
    out += fmt::format("\n// ---- {} ----\nstruct Ctx {{\n", fn_.name);
    for (size_t k2 = 0; k2 < inputs_.size(); ++k2)
      out += fmt::format("  const {}* in{};  // {}\n", ctype(fn_.body[inputs_[k2]].type.dtype), k2, field_of(inputs_[k2]));
    out += "  i64 first_index, epoch;\n  u64 seed;\n};\n";
    out += tables_;
    out += funcs_;
    out += kernel_text();
    k->source = std::move(out);
    for (int p : inputs_) k->input_fields.push_back(field_index(p));
    return k;
  }

 private:
  const Instr& at(int v) const { return fn_.body.at(v); }

  std::string where(int v) const {
    const Instr& in = at(v);
    return in.loc.valid() ? " (at " + in.loc.to_string() + ")" : "";
  }

  void mark_live() {
    live_.assign(fn_.body.size(), false);
    std::vector<int> work;
    for (const auto& r : fn_.results) work.push_back(r.second);
    while (!work.empty()) {
      int v = work.back();
      work.pop_back();
      if (v < 0 || v >= static_cast<int>(fn_.body.size())) throw Unsupported("result id out of range");
      if (live_[v]) continue;
      live_[v] = true;
      for (int o : at(v).operands) work.push_back(o);
    }
  }

  std::string field_of(int v) const {
    const Value* f = find_attr(at(v), "field");
    if (!f || f->kind != Value::String) throw Unsupported("param without a field");
    return f->s;
  }
  int field_index(int v) const {
    std::string f = field_of(v);
    for (size_t i = 0; i < in_fields_.size(); ++i)
      if (in_fields_[i] == f) return static_cast<int>(i);
    throw Unsupported(fmt::format("param `{}` is not a field of the input", f));
  }

  const Shape& shape(int v) const { return at(v).type.shape; }
  DType dtype(int v) const { return at(v).type.dtype; }

  /// Operand `k` of `v` read at index expression `idx` (same row), converted to `to`.
  std::string operand(int v, size_t k, const std::string& idx, DType to) const {
    int o = at(v).operands.at(k);
    return convert_expr(fmt::format("v{}(c, row, {})", o, idx), dtype(o), to);
  }
  /// Operand `k` broadcast against `v`'s shape, converted to `to`.
  std::string bcast(int v, size_t k, DType to) const {
    int o = at(v).operands.at(k);
    return operand(v, k, broadcast_index(shape(v), shape(o), "i"), to);
  }

  void need_operands(int v, size_t lo, size_t hi) const {
    size_t n = at(v).operands.size();
    if (n < lo || n > hi) throw Unsupported(fmt::format("`{}` with {} operands{}", op_name(at(v).op), n, where(v)));
  }

  void emit_instr(int v) {
    const Instr& in = at(v);
    if (!in.type.is_tensor()) throw Unsupported(fmt::format("`{}` does not produce a tensor{}", op_name(in.op), where(v)));
    for (int64_t d : in.type.shape)
      if (d < 0) throw Unsupported(fmt::format("`{}` has a shape known only at run time{}", op_name(in.op), where(v)));
    const DType rt = in.type.dtype;
    const std::string t = ctype(rt);
    std::string body = expr(v, rt, t);
    funcs_ += fmt::format("PIPEC_DEV {} v{}(const Ctx& c, i64 row, i64 i) {{  // {}\n  (void)c; (void)row; (void)i;\n  {}\n}}\n",
                          t, v, op_name(in.op), body);
  }

  /// The body of v's device function (statements ending in a return).
  std::string expr(int v, DType rt, const std::string& t) {
    const Instr& in = at(v);
    const OpKind op = in.op;
    if (op == OpKind::Param) {
      int k = -1;
      for (size_t j = 0; j < inputs_.size(); ++j)
        if (inputs_[j] == v) k = static_cast<int>(j);
      if (k < 0) {
        k = static_cast<int>(inputs_.size());
        field_index(v);
        inputs_.push_back(v);
      }
      return fmt::format("return c.in{}[row * {} + i];", k, numel(shape(v)));
    }
    if (op == OpKind::Const) {
      const Value* val = find_attr(in, "value");
      if (!val) throw Unsupported("const without a value" + where(v));
      Tensor tv;
      try {
        tv = tensor_from_value(*val, rt, shape(v));
      } catch (const std::exception& e) {
        throw Unsupported(std::string("const: ") + e.what() + where(v));
      }
      if (tv.num_elements() == 1) return fmt::format("return {};", literal(tv, 0));
      std::string items;
      for (int64_t k = 0; k < tv.num_elements(); ++k) items += (k ? (k % 8 ? ", " : ",\n  ") : "") + literal(tv, k);
      tables_ += fmt::format("PIPEC_TABLE {} k{}[{}] = {{\n  {}}};\n", t, v, tv.num_elements(), items);
      return fmt::format("return k{}[i];", v);
    }
    if (op == OpKind::Cast) {
      need_operands(v, 1, 1);
      return fmt::format("return {};", bcast(v, 0, rt));
    }
    if (op == OpKind::Reshape) {
      need_operands(v, 1, 1);
      return fmt::format("return {};", operand(v, 0, "i", rt));
    }
    if (op == OpKind::UnpackBits) {
      need_operands(v, 1, 1);
      if (dtype(in.operands[0]) != DType::U8 || rt != DType::U8) throw Unsupported("unpack_bits needs u8" + where(v));
      return fmt::format("return (u8)(({} >> (7 - (i & 7))) & 1);", operand(v, 0, "(i >> 3)", DType::U8));
    }
    if (op == OpKind::Slice) return slice(v, rt);
    if (op == OpKind::Gather) return gather(v, rt);
    if (op == OpKind::Where) {
      need_operands(v, 3, 3);
      return fmt::format("return {} ? {} : {};", bcast(v, 0, DType::Bool), bcast(v, 1, rt), bcast(v, 2, rt));
    }
    if (op == OpKind::Clip) {
      need_operands(v, 3, 3);
      if (rt == DType::Bool) throw Unsupported("clip of bool" + where(v));
      return fmt::format("{} x = {};\n  const {} lo = {}, hi = {};\n  x = x < lo ? lo : x;\n  return x > hi ? hi : x;", t,
                         bcast(v, 0, rt), t, bcast(v, 1, rt), bcast(v, 2, rt));
    }
    if (op == OpKind::Not) {
      need_operands(v, 1, 1);
      return fmt::format("return !{};", bcast(v, 0, DType::Bool));
    }
    if (op == OpKind::BitNot) {
      need_operands(v, 1, 1);
      if (is_float(rt)) throw Unsupported("bit_not of a float" + where(v));
      if (rt == DType::Bool) return fmt::format("return !{};", bcast(v, 0, rt));
      return fmt::format("return ({})~{};", t, bcast(v, 0, rt));
    }
    if (kFloatUnary.count(op) || kAnyUnary.count(op)) {
      need_operands(v, 1, 1);
      if (rt == DType::Bool) throw Unsupported(fmt::format("`{}` of bool{}", op_name(op), where(v)));
      if (kFloatUnary.count(op) && !is_float(rt)) throw Unsupported(fmt::format("`{}` of {}{}", op_name(op), dtype_name(rt), where(v)));
      return fmt::format("return p_{}({});", op_name(op), bcast(v, 0, rt));
    }
    if (kArith.count(op) || op == OpKind::Div) {
      need_operands(v, 2, 2);
      if (rt == DType::Bool) throw Unsupported(fmt::format("`{}` of bool{}", op_name(op), where(v)));
      if (op == OpKind::Div && !is_float(rt)) throw Unsupported("integer div" + where(v));
      return fmt::format("return p_{}({}, {});", op_name(op), bcast(v, 0, rt), bcast(v, 1, rt));
    }
    if (kBitwise.count(op)) {
      need_operands(v, 2, 2);
      if (is_float(rt)) throw Unsupported(fmt::format("`{}` of a float{}", op_name(op), where(v)));
      const char* sym = op == OpKind::BitAnd ? "&" : op == OpKind::BitOr ? "|" : "^";
      return fmt::format("return ({})({} {} {});", t, bcast(v, 0, rt), sym, bcast(v, 1, rt));
    }
    if (auto it = kCompare.find(op); it != kCompare.end()) {
      need_operands(v, 2, 2);
      const DType ot = dtype(in.operands[0]);
      return fmt::format("return {} {} {};", bcast(v, 0, ot), it->second, bcast(v, 1, ot));
    }
    if (op == OpKind::And || op == OpKind::Or) {
      need_operands(v, 2, 2);
      return fmt::format("return {} {} {};", bcast(v, 0, DType::Bool), op == OpKind::And ? "&&" : "||", bcast(v, 1, DType::Bool));
    }
    if (op == OpKind::RandomUniform || op == OpKind::RandomNormal) return random(v, rt, t);
    throw Unsupported(fmt::format("op `{}` has no CUDA lowering yet{}", op_name(op), where(v)));
  }

  std::string slice(int v, DType rt) {
    need_operands(v, 1, 1);
    const Instr& in = at(v);
    const int o = in.operands[0];
    const Shape& xs = shape(o);
    std::vector<int64_t> starts = attr_ints(in, "starts"), stops = attr_ints(in, "stops"), steps = attr_ints(in, "steps");
    if (starts.size() != stops.size() || starts.size() != steps.size() || starts.size() > xs.size())
      throw Unsupported("malformed slice" + where(v));
    const Shape xst = strides_of(xs);
    int64_t base = 0;
    std::string idx;
    for (size_t d = 0; d < xs.size(); ++d) {
      int64_t start = 0, step = 1;
      if (d < starts.size()) {
        if (steps[d] == 0) throw Unsupported("slice step 0" + where(v));
        const SliceBounds r = resolve_slice(starts[d], stops[d], steps[d], xs[d]);
        start = r.start;
        step = r.step;
      }
      if (shape(v).at(d) == 0) return fmt::format("return ({})0;", ctype(rt));
      base += start * xst[d];
      std::string term = coord(shape(v), d, "i");
      if (step * xst[d] != 1) term = fmt::format("{} * {}", term, step * xst[d]);
      idx += " + " + term;
    }
    return fmt::format("return {};", operand(v, 0, fmt::format("({}{})", base, idx), rt));
  }

  std::string gather(int v, DType rt) {
    need_operands(v, 1, 1);
    const Instr& in = at(v);
    const int o = in.operands[0];
    const Shape& xs = shape(o);
    const int64_t rank = static_cast<int64_t>(xs.size());
    int64_t ax = attr_int(in, "axis", 0);
    if (ax < 0) ax += rank;
    if (ax < 0 || ax >= rank) throw Unsupported("gather axis out of range" + where(v));
    std::vector<int64_t> idx = attr_ints(in, "indices");
    for (int64_t& i : idx) {
      if (i < 0) i += xs[ax];
      // The interpreter reports the bad index at run time; leaving the stage to it keeps that error.
      if (i < 0 || i >= xs[ax]) throw Unsupported("gather index out of range" + where(v));
    }
    if (idx.empty()) return fmt::format("return ({})0;", ctype(rt));
    std::string items;
    for (size_t k = 0; k < idx.size(); ++k) items += (k ? ", " : "") + fmt::format("{}ll", idx[k]);
    tables_ += fmt::format("PIPEC_TABLE i64 g{}[{}] = {{{}}};\n", v, idx.size(), items);
    const Shape xst = strides_of(xs);
    std::string sum;
    for (int64_t d = 0; d < rank; ++d) {
      std::string c = coord(shape(v), d, "i");
      if (d == ax) c = fmt::format("g{}[{}]", v, c);
      if (xst[d] != 1) c = fmt::format("{} * {}", c, xst[d]);
      sum += (sum.empty() ? "" : " + ") + c;
    }
    return fmt::format("return {};", operand(v, 0, "(" + sum + ")", rt));
  }

  std::string random(int v, DType rt, const std::string& t) {
    const Instr& in = at(v);
    need_operands(v, 0, 2);
    const std::string seed = find_attr(in, "seed") ? fmt::format("(u64){}ll", attr_int(in, "seed", 0)) : "c.seed";
    const std::string stream =
        fmt::format("{}, (u64){}ll, (u64)(c.first_index + row), (u64)c.epoch, i", seed, attr_int(in, "op_id", 0));
    if (in.op == OpKind::RandomUniform) {
      if (!is_float(rt)) throw Unsupported(fmt::format("random_uniform of {}{}", dtype_name(rt), where(v)));
      const std::string lo = in.operands.size() > 0 ? bcast(v, 0, rt) : (rt == DType::F64 ? "0.0" : "0.0f");
      const std::string hi = in.operands.size() > 1 ? bcast(v, 1, rt) : (rt == DType::F64 ? "1.0" : "1.0f");
      return fmt::format("const {} u = p_uniform_{}({});\n  const {} lo = {}, hi = {};\n  return ({})(lo + (hi - lo) * u);", t,
                         t, stream, t, lo, hi, t);
    }
    const std::string mean = in.operands.size() > 0 ? bcast(v, 0, DType::F64) : "0.0";
    const std::string sd = in.operands.size() > 1 ? bcast(v, 1, DType::F64) : "1.0";
    return fmt::format("const f64 z = p_normal({});\n  return {};", stream,
                       convert_expr(fmt::format("{} + {} * z", mean, sd), DType::F64, rt));
  }

  std::string kernel_text() const {
    std::string params;
    for (size_t k = 0; k < inputs_.size(); ++k)
      params += fmt::format("    const {}* __restrict__ in{},\n", ctype(dtype(inputs_[k])), k);
    for (size_t j = 0; j < fn_.results.size(); ++j)
      params += fmt::format("    {}* __restrict__ out{},  // {}\n", ctype(dtype(fn_.results[j].second)), j, fn_.results[j].first);
    std::string s = fmt::format("PIPEC_KERNEL void {}(\n{}    i64 rows, i64 first_index, i64 epoch, u64 seed) {{\n", entry_, params);
    s += "  Ctx c;\n";
    for (size_t k = 0; k < inputs_.size(); ++k) s += fmt::format("  c.in{} = in{};\n", k, k);
    s += "  c.first_index = first_index;\n  c.epoch = epoch;\n  c.seed = seed;\n";
    // One index space over every result in turn, so one launch computes them all.
    std::string total;
    for (size_t j = 0; j < fn_.results.size(); ++j) {
      s += fmt::format("  const i64 n{} = rows * {};\n", j, numel(shape(fn_.results[j].second)));
      total += (j ? " + n" : "n") + std::to_string(j);
    }
    s += fmt::format("  const i64 total = {};\n", total.empty() ? "0" : total);
    s += "  for (i64 t = PIPEC_THREAD_INDEX; t < total; t += PIPEC_THREAD_COUNT) {\n    i64 u = t;\n";
    for (size_t j = 0; j < fn_.results.size(); ++j) {
      const int64_t n = numel(shape(fn_.results[j].second));
      s += fmt::format("    if (u < n{0}) {{\n      const i64 row = u / {1}, i = u - row * {1};\n      out{0}[u] = v{2}(c, row, i);\n"
                       "      continue;\n    }}\n    u -= n{0};\n",
                       j, std::max<int64_t>(n, 1), fn_.results[j].second);
    }
    s += "  }\n}\n";
    return s;
  }

  const ExprFunction& fn_;
  const std::vector<std::string>& in_fields_;
  std::string entry_;
  std::vector<bool> live_;
  std::vector<int> inputs_;  // param instruction ids, in kernel parameter order
  std::string tables_, funcs_;
};

}  // namespace

CudaEmitResult emit_cuda_map(const ExprFunction& fn, const std::vector<std::string>& in_fields, const std::string& entry) {
  CudaEmitResult r;
  try {
    r.kernel = Emitter(fn, in_fields, entry).run();
  } catch (const Unsupported& e) {
    r.error = e.what();
  } catch (const OpError& e) {
    r.error = std::string("malformed attributes: ") + e.what();
  }
  return r;
}

}  // namespace pipec::cuda_codegen

#include "compiler/codegen/cuda/cuda_printer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/codegen/cuda/cuda_prelude.h"
#include "runtime/ops/native_random.h"

namespace pipec::cuda_codegen {

namespace {

using codegen::LoopNest;
using codegen::LoopOutput;
using codegen::Node;
using codegen::NodeKind;

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
    // Only a rounding's value between its two casts (loop_nest.h): the f32 it represents.
    case DType::F16:
    case DType::BF16: return "f32";
    default: throw std::logic_error(fmt::format("cuda printer: dtype {} in a loop nest", dtype_name(t)));
  }
}

// ---- Literals: exactly the value, typed as `t` (so templates deduce the right type).

std::string float_literal(double v, DType t) {
  if (t == DType::F32) {
    const float f = static_cast<float>(v);
    if (!std::isfinite(f)) {
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return fmt::format("PIPEC_F32_BITS(0x{:08x}u)", b);
    }
    return fmt::format("{:a}f", static_cast<double>(f));  // hexadecimal: exact
  }
  if (!std::isfinite(v)) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return fmt::format("PIPEC_F64_BITS(0x{:016x}ull)", b);
  }
  return fmt::format("{:a}", v);
}

std::string int_literal(int64_t v, DType t) {
  switch (t) {
    case DType::Bool: return v ? "true" : "false";
    case DType::I64:
      return v == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807ll - 1)" : fmt::format("{}ll", v);
    case DType::U64: return fmt::format("{}ull", static_cast<uint64_t>(v));
    case DType::I32:
      return v == std::numeric_limits<int32_t>::min() ? "(-2147483647 - 1)"
                                                      : fmt::format("{}", static_cast<int32_t>(v));
    case DType::U32: return fmt::format("{}u", static_cast<uint32_t>(v));
    default: return fmt::format("(({}){})", ctype(t), v);  // 8 and 16 bits: in range of int
  }
}

std::string node_literal(const Node& n) {
  return is_float(n.dtype) ? float_literal(n.fval, n.dtype) : int_literal(n.ival, n.dtype);
}

// Element k of a constant table as a literal.
std::string table_literal(const codegen::ConstTable& t, int64_t k) {
  const uint8_t* p = t.bytes.data() + k * static_cast<int64_t>(dtype_size(t.dtype));
  auto get = [&](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t.dtype) {
    case DType::Bool: return get(uint8_t{}) ? "true" : "false";
    case DType::U8: return std::to_string(get(uint8_t{}));
    case DType::I8: return std::to_string(get(int8_t{}));
    case DType::U16: return std::to_string(get(uint16_t{}));
    case DType::I16: return std::to_string(get(int16_t{}));
    case DType::U32: return int_literal(get(uint32_t{}), t.dtype);
    case DType::I32: return int_literal(get(int32_t{}), t.dtype);
    case DType::U64: return int_literal(static_cast<int64_t>(get(uint64_t{})), t.dtype);
    case DType::I64: return int_literal(get(int64_t{}), t.dtype);
    case DType::F32: return float_literal(get(float{}), t.dtype);
    case DType::F64: return float_literal(get(double{}), t.dtype);
    default: throw std::logic_error("cuda printer: table dtype");
  }
}

// Tables of floats with an infinity or NaN are stored as their bits: a __device__ array needs a
// constant initializer, and no C literal spells a NaN's payload.
bool has_non_finite(const codegen::ConstTable& t) {
  for (int64_t k = 0; k < t.count; ++k) {
    double v;
    if (t.dtype == DType::F32) {
      float f;
      std::memcpy(&f, t.bytes.data() + k * 4, 4);
      v = f;
    } else if (t.dtype == DType::F64) {
      std::memcpy(&v, t.bytes.data() + k * 8, 8);
    } else {
      return false;
    }
    if (!std::isfinite(v)) return true;
  }
  return false;
}
std::string table_bits_literal(const codegen::ConstTable& t, int64_t k) {
  if (t.dtype == DType::F32) {
    uint32_t b;
    std::memcpy(&b, t.bytes.data() + k * 4, 4);
    return fmt::format("0x{:08x}u", b);
  }
  uint64_t b;
  std::memcpy(&b, t.bytes.data() + k * 8, 8);
  return fmt::format("0x{:016x}ull", b);
}

// ---- Value conversions: the interpreter's `convert` (runtime/core/dtype_dispatch.h).

std::string cast_text(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  if (to == DType::BF16 || to == DType::F16 || from == DType::BF16 || from == DType::F16) {
    if (from == DType::F32) return fmt::format("p_round_{}({})", to == DType::BF16 ? "bf16" : "f16", x);
    if (to == DType::F32) return x;  // carried as the f32 it represents
    throw std::logic_error("cuda printer: a 16-bit cast outside a rounding");
  }
  if (to == DType::Bool) return fmt::format("({} != 0)", x);  // NaN is true, as the interpreter has it
  if (is_float(from) && !is_float(to)) return fmt::format("p_f2i_{}((f64){})", ctype(to), x);  // saturating
  return fmt::format("(({}){})", ctype(to), x);  // ints wrap, int->float and f64->f32 round to nearest
}

// The f32 or f64 version of a C math function.
std::string math_fn(const char* name, DType t) { return t == DType::F32 ? std::string(name) + "f" : name; }

// ---- The op set: one loop-nest Op (its interpreter semantics on operands of dtype `t`) as CUDA text.
// Kept in one function so the op names are mapped in one place.
std::string op_text(OpKind op, DType t, const std::vector<std::string>& a) {
  const bool f = is_float(t);
  auto call = [&](const char* fn) {
    std::string s = std::string(fn) + "(";
    for (size_t k = 0; k < a.size(); ++k) s += (k ? ", " : "") + a[k];
    return s + ")";
  };
  auto infix = [&](const char* sym) { return fmt::format("({} {} {})", a.at(0), sym, a.at(1)); };
  auto bits = [&](const char* sym) { return fmt::format("(({})({} {} {}))", ctype(t), a.at(0), sym, a.at(1)); };
  switch (op) {
    // Binary arithmetic: floats are plain IEEE operations; integers wrap (p_add...) and follow Python
    // for division, modulo and negative powers.
    case OpKind::Add: return f ? infix("+") : call("p_add");
    case OpKind::Sub: return f ? infix("-") : call("p_sub");
    case OpKind::Mul: return f ? infix("*") : call("p_mul");
    case OpKind::Div: return f ? infix("/") : call("p_floordiv");  // integer true division is floordiv
    case OpKind::FloorDiv: return call("p_floordiv");
    case OpKind::Mod: return call("p_mod");
    case OpKind::Pow: return f ? call(math_fn("pow", t).c_str()) : call("p_pow");
    case OpKind::Max: return call("p_max");  // NaN-propagating for floats
    case OpKind::Min: return call("p_min");
    case OpKind::Atan2: return call(math_fn("atan2", t).c_str());
    case OpKind::BitAnd: return bits("&");
    case OpKind::BitOr: return bits("|");
    case OpKind::BitXor: return bits("^");
    case OpKind::Shl: return call("p_shl");
    case OpKind::Shr: return call("p_shr");
    // Comparisons and logic (bool results); C's float comparisons are IEEE's (NaN != NaN).
    case OpKind::Eq: return infix("==");
    case OpKind::Ne: return infix("!=");
    case OpKind::Lt: return infix("<");
    case OpKind::Le: return infix("<=");
    case OpKind::Gt: return infix(">");
    case OpKind::Ge: return infix(">=");
    case OpKind::And: return infix("&&");
    case OpKind::Or: return infix("||");
    case OpKind::Not: return fmt::format("(!{})", a.at(0));
    case OpKind::Clip: return call("p_clip");
    // Unary.
    case OpKind::Neg: return f ? fmt::format("(-{})", a.at(0)) : call("p_neg");
    case OpKind::BitNot:
      return t == DType::Bool ? fmt::format("(!{})", a.at(0)) : fmt::format("(({})~{})", ctype(t), a.at(0));
    case OpKind::Abs: return call("p_abs");
    case OpKind::Sign: return call("p_sign");
    case OpKind::Relu: return call("p_relu");
    case OpKind::Square: return f ? fmt::format("({0} * {0})", a.at(0)) : fmt::format("p_mul({0}, {0})", a.at(0));
    case OpKind::Tanh:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Log1p:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Sqrt:
    case OpKind::Floor:
    case OpKind::Ceil: return call(math_fn(std::string(op_name(op)).c_str(), t).c_str());
    case OpKind::Rsqrt: return fmt::format("(({})1 / {}({}))", ctype(t), math_fn("sqrt", t), a.at(0));
    case OpKind::Round: return call("p_round");  // half to even
    case OpKind::Sigmoid: return call("p_sigmoid");
    default: break;
  }
  throw std::logic_error("cuda printer: unknown op " + std::string(op_name(op)));
}

// Index arithmetic on non-negative i64 values (NodeKind::Index).
std::string index_text(codegen::IndexOp op, const std::vector<std::string>& a) {
  using codegen::IndexOp;
  switch (op) {
    case IndexOp::Add: return fmt::format("({} + {})", a.at(0), a.at(1));
    case IndexOp::Sub: return fmt::format("({} - {})", a.at(0), a.at(1));
    case IndexOp::Mul: return fmt::format("({} * {})", a.at(0), a.at(1));
    case IndexOp::Div: return fmt::format("({} / {})", a.at(0), a.at(1));
    case IndexOp::Mod: return fmt::format("({} % {})", a.at(0), a.at(1));
    case IndexOp::Min: return fmt::format("({0} < {1} ? {0} : {1})", a.at(0), a.at(1));
    case IndexOp::Max: return fmt::format("({0} > {1} ? {0} : {1})", a.at(0), a.at(1));
    case IndexOp::Lt: return fmt::format("(i64)({} < {})", a.at(0), a.at(1));
    case IndexOp::Select: return fmt::format("({} != 0 ? {} : {})", a.at(0), a.at(1), a.at(2));
  }
  throw std::logic_error("cuda printer: unknown index op");
}

// A Reduce node's starting value and step (NodeKind::Reduce: sum/prod in `acc`, max/min in the
// operand's dtype starting at -inf/+inf or the integer limits).
std::string reduce_init(const Node& n) {
  using codegen::ReduceOp;
  const DType t = n.dtype;
  if (n.reduce_op == ReduceOp::Sum || n.reduce_op == ReduceOp::Prod) {
    const bool sum = n.reduce_op == ReduceOp::Sum;
    return is_float(t) ? (sum ? "0.0" : "1.0") : (sum ? "0ull" : "1ull");
  }
  const bool mx = n.reduce_op == ReduceOp::Max;
  if (is_float(t)) return float_literal(mx ? -INFINITY : INFINITY, t);
  if (t == DType::Bool) return mx ? "false" : "true";
  const std::string T = ctype(t);
  // (T)-1 is the largest unsigned value; signed limits come from it shifted.
  if (t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64)
    return mx ? fmt::format("(({})0)", T) : fmt::format("(({})-1)", T);
  const int bits = static_cast<int>(dtype_size(t)) * 8;
  const int64_t lo = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
  return int_literal(mx ? lo : -(lo + 1), t);
}
std::string reduce_step(const Node& n, const std::string& acc, const std::string& x) {
  using codegen::ReduceOp;
  switch (n.reduce_op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod: {
      const std::string v = cast_text(x, n.arg_dtype, n.dtype);
      return fmt::format("{} {} {}", acc, n.reduce_op == ReduceOp::Sum ? "+" : "*", v);  // f64, or u64 (wraps)
    }
    case ReduceOp::Max: return fmt::format("p_fold_max({}, {})", acc, x);  // a NaN sticks
    case ReduceOp::Min: return fmt::format("p_fold_min({}, {})", acc, x);
  }
  throw std::logic_error("cuda printer: unknown reduction");
}

// Prints one output's device function. Statements go to scopes: the function body, or the body of a
// Reduce loop; a node is printed in the innermost scope binding a Reduce variable it depends on.
class ResultPrinter {
 public:
  ResultPrinter(const LoopNest& nest, const std::vector<bool>& table_bits, const LoopOutput& out)
      : nest_(nest), table_bits_(table_bits), out_(out) {
    // free_[id]: the Reduce loop variables node id depends on (and that no Reduce inside it binds).
    const int rank = static_cast<int>(out.shape.size());
    free_.resize(out.nodes.size());
    for (size_t id = 0; id < out.nodes.size(); ++id) {
      const Node& n = out.nodes[id];
      std::set<int> s;
      if (n.kind == NodeKind::Var && n.var > rank) s.insert(n.var);
      for (int a : n.args) s.insert(free_.at(static_cast<size_t>(a)).begin(), free_.at(static_cast<size_t>(a)).end());
      if (n.kind == NodeKind::Reduce) s.erase(n.var);
      free_[id] = std::move(s);
    }
  }

  std::string print(const std::string& name) {
    auto root = std::make_unique<Scope>();
    root->indent = "  ";
    std::string result = value(out_.root, root.get());
    std::string params = "i64 v0";
    for (size_t d = 0; d < out_.shape.size(); ++d) params += fmt::format(", i64 v{}", d + 1);
    return fmt::format("PIPEC_DEV {} {}(const Ctx& c, {}) {{\n{}  return {};\n}}\n", ctype(out_.dtype), name, params,
                       root->text, result);
  }

 private:
  struct Scope {
    int depth = 0;
    std::string indent;
    std::string text;
    std::vector<int> memo_ids;  // memo entries made here, dropped when the scope closes
  };

  // The scope node `id` belongs to: the deepest one binding one of its free variables.
  Scope* home(int id, Scope* root) {
    Scope* s = root;
    for (int v : free_[static_cast<size_t>(id)]) {
      Scope* b = var_scope_.at(v);
      if (b->depth > s->depth) s = b;
    }
    return s;
  }

  // The C expression for node `id`, printing its statement (and its operands') first when needed.
  // `root` is the function body's scope.
  std::string value(int id, Scope* root) {
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    const Node& n = out_.nodes.at(static_cast<size_t>(id));
    if (n.kind == NodeKind::Var) return fmt::format("v{}", n.var);
    if (n.kind == NodeKind::Const) return node_literal(n);
    Scope* s = home(id, root);
    if (n.kind == NodeKind::Reduce) return reduce(id, n, s, root);
    std::vector<std::string> a;
    for (int arg : n.args) a.push_back(value(arg, root));
    std::string e;
    switch (n.kind) {
      case NodeKind::Load: {
        const codegen::LoopInput& in = nest_.inputs.at(static_cast<size_t>(n.input));
        e = fmt::format("c.in{}[v0 * {} + {}]", n.input, in.elems, a[0]);
        break;
      }
      case NodeKind::Table:
        e = fmt::format("table{}[{}]", n.table, a[0]);
        if (table_bits_.at(static_cast<size_t>(n.table)))
          e = fmt::format("PIPEC_{}_BITS({})", n.dtype == DType::F32 ? "F32" : "F64", e);
        break;
      case NodeKind::Index: e = index_text(n.index_op, a); break;
      case NodeKind::Op: e = op_text(n.op, n.arg_dtype, a); break;
      case NodeKind::Cast: e = cast_text(a[0], n.arg_dtype, n.dtype); break;
      case NodeKind::Select: e = fmt::format("({} ? {} : {})", a[0], a[1], a[2]); break;
      case NodeKind::Random: e = random_text(n, a[0]); break;
      default: throw std::logic_error("cuda printer: node kind");
    }
    return define(id, n.dtype, e, s);
  }

  std::string define(int id, DType t, const std::string& e, Scope* s) {
    const std::string name = fmt::format("n{}", id);
    s->text += fmt::format("{}const {} {} = {};\n", s->indent, ctype(t), name, e);
    memo_[id] = name;
    s->memo_ids.push_back(id);
    return name;
  }

  // `T nK = init; for (i64 vR = 0; vR < N; ++vR) { body; nK = step; }` in scope `s`.
  std::string reduce(int id, const Node& n, Scope* s, Scope* root) {
    Scope loop;
    loop.depth = s->depth + 1;
    loop.indent = s->indent + "  ";
    var_scope_[n.var] = &loop;
    const std::string acc = fmt::format("n{}", id);
    const std::string x = value(n.args.at(0), root);
    const std::string step = reduce_step(n, acc, x);
    for (int m : loop.memo_ids) memo_.erase(m);  // those values live in the loop body only
    var_scope_.erase(n.var);
    s->text += fmt::format("{}{} {} = {};\n{}for (i64 v{} = 0; v{} < {}; ++v{}) {{\n{}{}  {} = {};\n{}}}\n", s->indent,
                           ctype(n.dtype), acc, reduce_init(n), s->indent, n.var, n.var, n.ival, n.var, loop.text,
                           s->indent, acc, step, s->indent);
    memo_[id] = acc;
    s->memo_ids.push_back(id);
    return acc;
  }

  std::string random_text(const Node& n, const std::string& k) {
    const codegen::RandomDraws& r = nest_.randoms.at(static_cast<size_t>(n.random));
    const std::string stream = fmt::format("{}, {}ull, (u64)(c.first_index + v0), (u64)c.epoch, {}",
                                           r.has_seed ? fmt::format("{}ull", r.seed) : "c.seed", r.op_id, k);
    switch (r.kind) {
      case kRandomUniformF32: return fmt::format("p_uniform_f32({})", stream);
      case kRandomUniformF64: return fmt::format("p_uniform_f64({})", stream);
      case kRandomNormal: return fmt::format("p_normal({})", stream);
      case kRandomInt:
        return fmt::format("p_random_int({}, {}, {})", stream, int_literal(r.lo, DType::I64),
                           int_literal(r.hi, DType::I64));
      default: throw std::logic_error("cuda printer: random kind");
    }
  }

  const LoopNest& nest_;
  const std::vector<bool>& table_bits_;
  const LoopOutput& out_;
  std::vector<std::set<int>> free_;
  std::map<int, Scope*> var_scope_;  // Reduce variable -> the loop scope binding it
  std::map<int, std::string> memo_;  // node id -> its C name, while its scope is open
};

// The grid-stride loop over every result element, its index split into coordinates in `index`
// arithmetic (u32 or i64), each element computed by its result function.
std::string element_loop(const LoopNest& nest, const std::string& index, const std::string& pad) {
  std::string s;
  const std::string n = index == "i64" ? "n" : "m";  // the counts in the loop's type
  if (index != "i64") {
    for (size_t j = 0; j < nest.outputs.size(); ++j)
      s += fmt::format("{}const {} m{} = ({})n{};\n", pad, index, j, index, j);
  }
  s += pad +
       fmt::format("for ({0} t = ({0})PIPEC_THREAD_INDEX; t < ({0})total; t += ({0})PIPEC_THREAD_COUNT) {{\n", index);
  s += fmt::format("{}  {} u = t;\n", pad, index);
  for (size_t j = 0; j < nest.outputs.size(); ++j) {
    const LoopOutput& o = nest.outputs[j];
    if (o.elems > 0) {
      s += fmt::format("{}  if (u < {}{}) {{\n", pad, n, j);
      if (o.shape.empty()) s += fmt::format("{}    const {} v0 = u;\n", pad, index);
      else s += fmt::format("{0}    const {1} v0 = u / {2};\n{0}    {1} e = u - v0 * {2};\n", pad, index, o.elems);
      std::string args = "v0";
      for (size_t d = o.shape.size(); d-- > 0;) {
        if (d == 0) s += fmt::format("{}    const {} v1 = e;\n", pad, index);
        else s += fmt::format("{0}    const {1} v{2} = e % {3};\n{0}    e /= {3};\n", pad, index, d + 1, o.shape[d]);
      }
      for (size_t d = 0; d < o.shape.size(); ++d) args += fmt::format(", v{}", d + 1);
      s += fmt::format("{0}    out{1}[u] = result{1}(c, {2});\n{0}    continue;\n{0}  }}\n", pad, j, args);
    }
    if (j + 1 < nest.outputs.size()) s += fmt::format("{}  u -= {}{};\n", pad, n, j);
  }
  s += pad + "}\n";
  return s;
}

std::string kernel_text(const LoopNest& nest, const std::string& entry) {
  std::string params;
  for (size_t k = 0; k < nest.inputs.size(); ++k)
    params += fmt::format("    const {}* __restrict__ in{},\n", ctype(nest.inputs[k].dtype), k);
  for (size_t j = 0; j < nest.outputs.size(); ++j)
    params +=
        fmt::format("    {}* __restrict__ out{},  // {}\n", ctype(nest.outputs[j].dtype), j, nest.outputs[j].name);
  std::string s =
      fmt::format("PIPEC_KERNEL void {}(\n{}    i64 rows, i64 first_index, i64 epoch, u64 seed) {{\n", entry, params);
  s += "  Ctx c;\n";
  for (size_t k = 0; k < nest.inputs.size(); ++k) s += fmt::format("  c.in{0} = in{0};\n", k);
  s += "  c.first_index = first_index;\n  c.epoch = epoch;\n  c.seed = seed;\n";
  // One index space over every result in turn (rows x elements each), so one launch computes them all.
  std::string total;
  for (size_t j = 0; j < nest.outputs.size(); ++j) {
    s += fmt::format("  const i64 n{} = rows * {};\n", j, nest.outputs[j].elems);
    total += (j ? " + n" : "n") + std::to_string(j);
  }
  s += fmt::format("  const i64 total = {};\n", total.empty() ? "0" : total);
  // The index space in 32 bits whenever it fits (every chunk a pipeline makes): splitting an index
  // into coordinates divides by the result's extents, and a 64-bit division by a constant costs
  // several times a 32-bit one on a GPU, where this arithmetic, not memory, bounded the first chess
  // kernel (a fifth of the device's copy bandwidth). The coordinates still reach the results as i64.
  s += "  if (total <= 0x7fffffffll) {\n";
  s += element_loop(nest, "u32", "    ");
  s += "  } else {\n";
  s += element_loop(nest, "i64", "    ");
  s += "  }\n}\n";
  return s;
}

}  // namespace

bool print_cuda_kernel(const LoopNest& nest, const std::string& entry, std::string& source, std::string& why_not) {
  // A GPU kernel has no way to stop and report a bad index (it would need an error flag read back and
  // the chunk rerun on the CPU), so maps with run-time index checks stay on the CPU, where the JIT
  // runs them.
  if (!nest.checks.empty()) {
    why_not = fmt::format("{}: an index computed at run time needs a check the CUDA kernels do not make",
                          nest.checks.front().name);
    return false;
  }
  std::string out(cuda_prelude());
  out += fmt::format("\n// ---- {} ----\nstruct Ctx {{\n", nest.name);
  for (size_t k = 0; k < nest.inputs.size(); ++k) {
    const codegen::LoopInput& in = nest.inputs[k];
    out += fmt::format("  const {}* in{};  // `{}`: {}[{}] per row\n", ctype(in.dtype), k, in.field,
                       dtype_name(in.dtype), fmt::join(in.shape, ", "));
  }
  out += "  i64 first_index, epoch;\n  u64 seed;\n};\n";
  // Only the tables the results read: lowering may leave tables of rewrites it abandoned.
  std::vector<bool> used(nest.tables.size(), false);
  for (const LoopOutput& o : nest.outputs) {
    std::vector<bool> seen(o.nodes.size(), false);
    std::vector<int> todo;
    if (o.root >= 0) todo.push_back(o.root);
    while (!todo.empty()) {
      const int id = todo.back();
      todo.pop_back();
      if (seen.at(static_cast<size_t>(id))) continue;
      seen[static_cast<size_t>(id)] = true;
      const Node& n = o.nodes[static_cast<size_t>(id)];
      if (n.kind == NodeKind::Table) used.at(static_cast<size_t>(n.table)) = true;
      todo.insert(todo.end(), n.args.begin(), n.args.end());
    }
  }
  int64_t table_elements = 0;
  for (size_t t = 0; t < nest.tables.size(); ++t) table_elements += used[t] ? nest.tables[t].count : 0;
  if (table_elements > kMaxCudaTableElements) {
    why_not = fmt::format("{}: its constant tables hold {} elements, over the {} a CUDA kernel's source may carry",
                          nest.name, table_elements, kMaxCudaTableElements);
    return false;
  }
  std::vector<bool> table_bits;
  for (size_t t = 0; t < nest.tables.size(); ++t) {
    const codegen::ConstTable& tab = nest.tables[t];
    table_bits.push_back(has_non_finite(tab));
    if (!used[t]) continue;
    std::string items;
    for (int64_t k = 0; k < tab.count; ++k)
      items += (k == 0  ? ""
                : k % 8 ? ", "
                        : ",\n  ") +
               (table_bits.back() ? table_bits_literal(tab, k) : table_literal(tab, k));
    // A zero-length array is not C++: an empty table gets one unused element.
    if (tab.count == 0) items = "0";
    const std::string type = !table_bits.back() ? ctype(tab.dtype) : tab.dtype == DType::F32 ? "u32" : "u64";
    out += fmt::format("PIPEC_TABLE {} table{}[{}] = {{\n  {}}};\n", type, t, std::max<int64_t>(tab.count, 1), items);
  }
  for (size_t j = 0; j < nest.outputs.size(); ++j) {
    const LoopOutput& o = nest.outputs[j];
    out += fmt::format("// result {} `{}`: {}[{}]\n", j, o.name, dtype_name(o.dtype), fmt::join(o.shape, ", "));
    if (o.elems > 0) out += ResultPrinter(nest, table_bits, o).print(fmt::format("result{}", j));
  }
  out += kernel_text(nest, entry);
  source = std::move(out);
  return true;
}

}  // namespace pipec::cuda_codegen

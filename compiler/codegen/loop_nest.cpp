#include "compiler/codegen/loop_nest.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "runtime/ops/kernel.h"
#include "runtime/ops/native_random.h"
#include "runtime/ops/slice_bounds.h"

namespace pipec::codegen {

namespace {

// Index tables longer than this are not folded into new tables (each fold copies the table).
constexpr int64_t kMaxFoldedTable = 1 << 16;

struct Unsupported {
  std::string why;
};
// Thrown by the lowering of one instruction about that instruction; compute() names it (Unsupported
// from its operands' lowering already names theirs).
struct UnsupportedHere {
  std::string why;
};

std::string where(const Instr& in, int id) {
  return fmt::format("%{} = {}{}", id, op_name(in.op), in.loc.valid() ? " at " + in.loc.to_string() : "");
}

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Builds one output's expression DAG. Nodes are hash-consed so equal index arithmetic is shared.
class OutputBuilder {
 public:
  OutputBuilder(const ExprFunction& fn, const std::vector<Tensor>& folded, const std::vector<int>& input_of,
                LoopNest& nest, LoopOutput& out)
      : fn_(fn), folded_(folded), input_of_(input_of), nest_(nest), out_(out) {}

  int var(int v) {
    Node n;
    n.kind = NodeKind::Var;
    n.var = v;
    return add(n);
  }
  int iconst(int64_t v, DType dt = DType::I64) {
    Node n;
    n.kind = NodeKind::Const;
    n.dtype = dt;
    n.ival = v;
    return add(n);
  }
  int index(IndexOp op, int a, int b) {
    const Node x = out_.nodes[a];  // copies: adding nodes below may move the vector
    const Node y = out_.nodes[b];
    const bool xc = x.kind == NodeKind::Const, yc = y.kind == NodeKind::Const;
    if (xc && yc) {
      if (auto v = fold_index(op, x.ival, y.ival)) return iconst(*v);
    }
    if (int r = split_by_divisor(op, a, b); r >= 0) return r;
    if (int r = fold_into_table(op, a, b); r >= 0) return r;
    if (op == IndexOp::Add && xc && x.ival == 0) return b;
    if ((op == IndexOp::Add || op == IndexOp::Sub) && yc && y.ival == 0) return a;
    if (op == IndexOp::Mul && ((xc && x.ival == 0) || (yc && y.ival == 0))) return iconst(0);
    if (op == IndexOp::Mul && xc && x.ival == 1) return b;
    if ((op == IndexOp::Mul || op == IndexOp::Div) && yc && y.ival == 1) return a;
    if (op == IndexOp::Mod && yc && y.ival == 1) return iconst(0);
    Node n;
    n.kind = NodeKind::Index;
    n.index_op = op;
    n.args = {a, b};
    return add(n);
  }
  int cast(int a, DType to) {
    const Node& x = out_.nodes[a];
    if (x.dtype == to) return a;
    if (int r = cast_table(a, to); r >= 0) return r;
    Node n;
    n.kind = NodeKind::Cast;
    n.dtype = to;
    n.arg_dtype = x.dtype;
    n.args = {a};
    return add(n);
  }
  int op(OpKind name, std::vector<int> args, DType result) {
    Node n;
    n.kind = NodeKind::Op;
    n.op = name;
    n.dtype = result;
    n.arg_dtype = out_.nodes[args.at(0)].dtype;
    n.args = std::move(args);
    return add(n);
  }
  int select(int c, int a, int b) {
    Node n;
    n.kind = NodeKind::Select;
    n.dtype = out_.nodes[a].dtype;
    n.args = {c, a, b};
    return add(n);
  }

  // The flat row-major index of `idx` in `shape`.
  int linearize(const std::vector<int>& idx, const std::vector<int64_t>& shape) {
    int flat = iconst(0);
    for (size_t d = 0; d < shape.size(); ++d)
      flat = index(IndexOp::Add, index(IndexOp::Mul, flat, iconst(shape[d])), idx[d]);
    return flat;
  }
  std::vector<int> delinearize(int flat, const std::vector<int64_t>& shape) {
    std::vector<int> idx(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      int q = index(IndexOp::Div, flat, iconst(stride));
      idx[d] = d == 0 ? q : index(IndexOp::Mod, q, iconst(shape[d]));
      stride *= shape[d];
    }
    return idx;
  }

  // The node computing value `id` at element index `idx` (one node per dimension of its type).
  int value(int id, const std::vector<int>& idx) {
    auto key = std::make_pair(id, idx);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    int r = compute(id, idx);
    memo_[key] = r;
    return r;
  }

  // dynamic_index `id`: a bool node, true when the row's index lies in the dimension (the check).
  int index_in_range(int id) { return run_time_index(id).second; }

 private:
  // ---- Index rewrites.
  // unpack_bits and reshapes through a flat index divide row-major offsets and take their remainders
  // (bit = (sq * 24 + plane) / 8). Splitting such a division along a multiple of the divisor leaves
  // the loop-carried part affine (sq * 3 + plane / 8), and folding a table lookup followed by constant
  // arithmetic into a new table leaves one lookup per element: once LLVM unrolls a short inner loop
  // those lookups are constants, and the byte address is a base plus a constant. Both rewrites need
  // non-negative operands (division truncates), which nonneg() proves or the rewrite is not made.

  // The value of an index op on two constants (the node semantics of NodeKind::Index).
  static std::optional<int64_t> fold_index(IndexOp op, int64_t p, int64_t q) {
    switch (op) {
      case IndexOp::Add: return p + q;
      case IndexOp::Sub: return p - q;
      case IndexOp::Mul: return p * q;
      case IndexOp::Div: return q ? p / q : 0;
      case IndexOp::Mod: return q ? p % q : 0;
      case IndexOp::Min: return std::min(p, q);
      case IndexOp::Max: return std::max(p, q);
      case IndexOp::Lt: return p < q;
      case IndexOp::Select: return std::nullopt;  // three operands
    }
    return std::nullopt;
  }

  // True when node `id` is provably >= 0.
  bool nonneg(int id) {
    const Node& n = out_.nodes[id];
    switch (n.kind) {
      case NodeKind::Var: return true;
      case NodeKind::Const: return is_integer(n.dtype) && n.ival >= 0;
      case NodeKind::Table: return table_nonneg(n.table);
      case NodeKind::Index:
        if (n.index_op == IndexOp::Sub) return false;
        for (size_t k = n.index_op == IndexOp::Select ? 1 : 0; k < n.args.size(); ++k)
          if (!nonneg(n.args[k])) return false;
        return true;
      default: return false;
    }
  }
  bool table_nonneg(int tid) {
    const ConstTable& t = nest_.tables[tid];
    if (t.dtype != DType::I64) return false;
    for (int64_t i = 0; i < t.count; ++i)
      if (table_i64(t, i) < 0) return false;
    return true;
  }
  static int64_t table_i64(const ConstTable& t, int64_t i) {
    int64_t v;
    std::memcpy(&v, t.bytes.data() + i * 8, 8);
    return v;
  }

  // True when node `id` is a multiple of d (> 0) whatever the loop indices are.
  bool multiple_of(int id, int64_t d) {
    const Node& n = out_.nodes[id];
    if (n.kind == NodeKind::Const) return is_integer(n.dtype) && n.ival % d == 0;
    if (n.kind != NodeKind::Index) return false;
    if (n.index_op == IndexOp::Mul) return multiple_of(n.args[0], d) || multiple_of(n.args[1], d);
    if (n.index_op == IndexOp::Add || n.index_op == IndexOp::Sub)
      return multiple_of(n.args[0], d) && multiple_of(n.args[1], d);
    return false;
  }
  // id / d for a node that multiple_of(id, d) accepted: exact, so it distributes over + and *.
  int exact_div(int id, int64_t d) {
    const Node n = out_.nodes[id];
    if (n.kind == NodeKind::Const) return iconst(n.ival / d);
    if (n.index_op == IndexOp::Mul) {
      const int k = multiple_of(n.args[0], d) ? 0 : 1;
      return index(IndexOp::Mul, exact_div(n.args[k], d), n.args[1 - k]);
    }
    return index(n.index_op, exact_div(n.args[0], d), exact_div(n.args[1], d));
  }

  // (m + r) / d = m / d + r / d and (m + r) % d = r % d when m is a multiple of d and m, r >= 0.
  // Returns the rewritten node, or -1.
  int split_by_divisor(IndexOp op, int a, int b) {
    if (op != IndexOp::Div && op != IndexOp::Mod) return -1;
    const Node& y = out_.nodes[b];
    if (y.kind != NodeKind::Const || y.ival <= 0 || y.ival == 1) return -1;
    const int64_t d = y.ival;
    if (multiple_of(a, d) && nonneg(a)) return op == IndexOp::Div ? exact_div(a, d) : iconst(0);
    const Node x = out_.nodes[a];
    if (x.kind != NodeKind::Index || x.index_op != IndexOp::Add) return -1;
    for (int k = 0; k < 2; ++k) {
      const int m = x.args[k], r = x.args[1 - k];
      if (!multiple_of(m, d) || !nonneg(m) || !nonneg(r)) continue;
      return op == IndexOp::Div ? index(IndexOp::Add, exact_div(m, d), index(IndexOp::Div, r, b))
                                : index(IndexOp::Mod, r, b);
    }
    return -1;
  }

  // table[i] (op) c or c (op) table[i], for an i64 table, becomes newtable[i]. Returns it, or -1.
  int fold_into_table(IndexOp op, int a, int b) {
    const Node& x = out_.nodes[a];
    const Node& y = out_.nodes[b];
    const bool table_left = x.kind == NodeKind::Table && y.kind == NodeKind::Const;
    const bool table_right = y.kind == NodeKind::Table && x.kind == NodeKind::Const;
    if (!table_left && !table_right) return -1;
    const Node& t = table_left ? x : y;
    const int64_t c = table_left ? y.ival : x.ival;
    const ConstTable& src = nest_.tables[t.table];
    if (src.dtype != DType::I64 || src.count > kMaxFoldedTable) return -1;
    std::vector<int64_t> vals(static_cast<size_t>(src.count));
    for (int64_t i = 0; i < src.count; ++i) {
      const int64_t v = table_i64(src, i);
      auto r = table_left ? fold_index(op, v, c) : fold_index(op, c, v);
      if (!r) return -1;
      vals[static_cast<size_t>(i)] = *r;
    }
    ConstTable out;
    out.dtype = DType::I64;
    out.count = src.count;
    out.bytes.resize(vals.size() * 8);
    std::memcpy(out.bytes.data(), vals.data(), out.bytes.size());
    return table_node(std::move(out), t.args[0]);
  }

  // An integer cast of an i64 table lookup becomes a lookup in a table of the target type, when every
  // entry fits it (so no cast semantics are involved). Returns it, or -1.
  int cast_table(int a, DType to) {
    const Node& x = out_.nodes[a];
    if (x.kind != NodeKind::Table || !is_integer(to)) return -1;
    const ConstTable& src = nest_.tables[x.table];
    if (src.dtype != DType::I64 || src.count > kMaxFoldedTable) return -1;
    const size_t w = dtype_size(to);
    ConstTable out;
    out.dtype = to;
    out.count = src.count;
    out.bytes.resize(static_cast<size_t>(src.count) * w);
    for (int64_t i = 0; i < src.count; ++i) {
      const int64_t v = table_i64(src, i);
      const bool fits = is_signed_int(to)
                            ? (w == 8 || (v >= -(int64_t{1} << (8 * w - 1)) && v < (int64_t{1} << (8 * w - 1))))
                            : (v >= 0 && (w == 8 || v < (int64_t{1} << (8 * w))));
      if (!fits) return -1;
      std::memcpy(out.bytes.data() + static_cast<size_t>(i) * w, &v, w);  // little-endian low bytes
    }
    return table_node(std::move(out), x.args[0]);
  }

  // unpack_bits at bit m + r, where m is a multiple of 8 that does not depend on the innermost loop and
  // r ranges over [0, R) with R <= 64, reads bytes m/8 .. m/8 + ceil(R/8) - 1 only: assemble them into
  // one big-endian word W (loads LLVM hoists out of the inner loop) and take bit (W >> (8n - 1 - r)) & 1.
  // The inner loop is then a shift by a per-lane amount, a mask and a convert: it vectorizes, where a
  // byte load at a computed address per element does not. r must be a loop index (its extent is R)
  // or a table read at a loop index over the whole table (so its largest value is really read: no
  // byte beyond those the plain lowering reads is touched). Returns -1 when the pattern does not apply.
  int unpack_bits_from_word(int operand, const std::vector<int>& idx) {
    const int last = idx.back();
    const Node n = out_.nodes[last];
    int m = -1, r = -1;
    if (n.kind == NodeKind::Index && n.index_op == IndexOp::Add) {
      for (int k = 0; k < 2 && m < 0; ++k)
        if (multiple_of(n.args[k], 8) && nonneg(n.args[k])) m = n.args[k], r = n.args[1 - k];
    } else {
      m = iconst(0), r = last;
    }
    if (m < 0) return -1;
    const std::optional<int64_t> range = full_range(r);
    if (!range || *range <= 0 || *range > 64) return -1;
    const int64_t nbytes = (*range - 1) / 8 + 1;
    const DType wt = nbytes <= 4 ? DType::U32 : DType::U64;
    const int base = exact_div(m, 8);
    std::vector<int> ii = idx;
    int word = -1;
    for (int64_t t = 0; t < nbytes; ++t) {
      ii.back() = index(IndexOp::Add, base, iconst(t));
      int b = cast(value(operand, ii), wt);
      if (t + 1 < nbytes) b = op(OpKind::Shl, {b, iconst(8 * (nbytes - 1 - t), wt)}, wt);
      word = word < 0 ? b : op(OpKind::BitOr, {word, b}, wt);
    }
    const int shift = cast(index(IndexOp::Sub, iconst(8 * nbytes - 1), r), wt);
    return cast(op(OpKind::BitAnd, {op(OpKind::Shr, {word, shift}, wt), iconst(1, wt)}, wt), DType::U8);
  }

  // An exclusive upper bound of non-negative node `id` that it attains (it equals bound - 1 for some
  // loop index), or nullopt: a loop index of the output (its extent), or a non-negative i64 table read
  // at such an index over the whole table (its largest entry + 1).
  std::optional<int64_t> full_range(int id) {
    const Node& n = out_.nodes[id];
    if (n.kind == NodeKind::Var) {
      if (n.var < 1 || n.var > static_cast<int>(out_.shape.size())) return std::nullopt;
      return out_.shape[static_cast<size_t>(n.var - 1)];
    }
    if (n.kind != NodeKind::Table || !table_nonneg(n.table)) return std::nullopt;
    const ConstTable& t = nest_.tables[n.table];
    const std::optional<int64_t> at = full_range(n.args[0]);
    if (!at || *at != t.count) return std::nullopt;
    int64_t hi = 0;
    for (int64_t i = 0; i < t.count; ++i) hi = std::max(hi, table_i64(t, i));
    return hi + 1;
  }

  // A Table node reading `tab` at `at`; equal tables are stored once.
  int table_node(ConstTable tab, int at) {
    int tid = -1;
    for (size_t i = 0; i < nest_.tables.size() && tid < 0; ++i) {
      const ConstTable& t = nest_.tables[i];
      if (t.dtype == tab.dtype && t.count == tab.count && t.bytes == tab.bytes) tid = static_cast<int>(i);
    }
    if (tid < 0) {
      nest_.tables.push_back(std::move(tab));
      tid = static_cast<int>(nest_.tables.size()) - 1;
    }
    Node n;
    n.kind = NodeKind::Table;
    n.dtype = nest_.tables[tid].dtype;
    n.table = tid;
    n.args = {at};
    return add(n);
  }

  int add(const Node& n) {
    uint64_t fbits;
    std::memcpy(&fbits, &n.fval, 8);  // by bits: -0.0 and NaN payloads stay distinct
    std::string key = fmt::format("{}|{}|{}|{}.{}.{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(n.kind),
                                  static_cast<int>(n.dtype), static_cast<int>(n.arg_dtype), static_cast<int>(n.op),
                                  static_cast<int>(n.index_op), static_cast<int>(n.reduce_op), n.var, n.input, n.table,
                                  n.random, n.ival, fbits, fmt::join(n.args, ","));
    if (auto it = cse_.find(key); it != cse_.end()) return it->second;
    out_.nodes.push_back(n);
    int id = static_cast<int>(out_.nodes.size()) - 1;
    cse_[key] = id;
    return id;
  }

  const Type& type_of(int id) const { return fn_.body.at(static_cast<size_t>(id)).type; }

  // Operand `o` of a broadcasting op whose result has shape `shape`, at `idx`.
  int broadcast_operand(int o, const std::vector<int64_t>& shape, const std::vector<int>& idx) {
    const auto& os = type_of(o).shape;
    const size_t off = shape.size() - os.size();
    std::vector<int> oi(os.size());
    for (size_t d = 0; d < os.size(); ++d) oi[d] = (os[d] == 1 && shape[d + off] != 1) ? iconst(0) : idx[d + off];
    return value(o, oi);
  }

  // dynamic_index `id`'s index, counted from the front as the interpreter's kernel does (a negative
  // one of a signed dtype counts from the end), and whether it lies in the dimension: (i64 node, bool
  // node). Unsigned indices compare as u64, so values above i64's range are out of range too.
  std::pair<int, int> run_time_index(int id) {
    const Instr& in = fn_.body.at(static_cast<size_t>(id));
    const auto& xs = type_of(in.operands.at(0)).shape;
    const int64_t ax = normalize_axis(attr_int(in, "axis", 0), static_cast<int64_t>(xs.size()));
    const int64_t n = xs.at(static_cast<size_t>(ax));
    if (n == 0)
      throw Unsupported{fmt::format(
          "{} indexes a dimension of size 0 (every index is out of range: the interpreter reports it)", where(in, id))};
    const int raw = value(in.operands.at(1), {});
    const DType it = out_.nodes[raw].dtype;
    if (!is_integer(it)) throw Unsupported{fmt::format("{}: an index of dtype {}", where(in, id), dtype_name(it))};
    if (is_unsigned_int(it)) {
      const int u = cast(raw, DType::U64);
      return {cast(raw, DType::I64), op(OpKind::Lt, {u, iconst(n, DType::U64)}, DType::Bool)};
    }
    const int x = cast(raw, DType::I64);
    const int j = select(op(OpKind::Lt, {x, iconst(0)}, DType::Bool), op(OpKind::Add, {x, iconst(n)}, DType::I64), x);
    const int ok =
        op(OpKind::And, {op(OpKind::Ge, {j, iconst(0)}, DType::Bool), op(OpKind::Lt, {j, iconst(n)}, DType::Bool)},
           DType::Bool);
    return {j, ok};
  }

  int folded(int id, const std::vector<int>& idx) {
    const Tensor& t = folded_[id];
    const DType dt = t.dtype();
    if (t.num_elements() == 1) return const_of(t, 0);
    // One table per folded value.
    auto it = table_of_.find(id);
    int tid;
    if (it == table_of_.end()) {
      ConstTable tab;
      tab.dtype = dt;
      tab.count = t.num_elements();
      tab.bytes.assign(t.raw(), t.raw() + t.byte_size());
      nest_.tables.push_back(std::move(tab));
      tid = static_cast<int>(nest_.tables.size()) - 1;
      table_of_[id] = tid;
    } else {
      tid = it->second;
    }
    Node n;
    n.kind = NodeKind::Table;
    n.dtype = dt;
    n.table = tid;
    n.args = {linearize(idx, t.shape())};
    return add(n);
  }

  int const_of(const Tensor& t, int64_t i) {
    Node n;
    n.kind = NodeKind::Const;
    n.dtype = t.dtype();
    switch (t.dtype()) {
      case DType::Bool: n.ival = t.data<bool>()[i] ? 1 : 0; break;
      case DType::U8: n.ival = t.data<uint8_t>()[i]; break;
      case DType::I8: n.ival = t.data<int8_t>()[i]; break;
      case DType::U16: n.ival = t.data<uint16_t>()[i]; break;
      case DType::I16: n.ival = t.data<int16_t>()[i]; break;
      case DType::U32: n.ival = t.data<uint32_t>()[i]; break;
      case DType::I32: n.ival = t.data<int32_t>()[i]; break;
      case DType::U64: n.ival = static_cast<int64_t>(t.data<uint64_t>()[i]); break;
      case DType::I64: n.ival = t.data<int64_t>()[i]; break;
      case DType::F32: n.fval = t.data<float>()[i]; break;
      case DType::F64: n.fval = t.data<double>()[i]; break;
      default: throw Unsupported{"a constant of an unsupported dtype"};
    }
    return add(n);
  }

  int compute(int id, const std::vector<int>& idx) {
    if (folded_[id].defined()) return folded(id, idx);
    const Instr& in = fn_.body.at(static_cast<size_t>(id));
    const auto& shape = in.type.shape;
    const DType rt = in.type.dtype;
    auto operand = [&](size_t k) { return in.operands.at(k); };
    // The first operand's shape (structural ops); random ops may have no operand.
    static const std::vector<int64_t> kNoOperand;
    const auto& xs = in.operands.empty() ? kNoOperand : type_of(operand(0)).shape;
    // Every op has a case: an op added to runtime/plan/ops.def makes the compiler point here.
    switch (in.op) {
      case OpKind::Param: {
        const LoopInput& li = nest_.inputs.at(static_cast<size_t>(input_of_.at(id)));
        Node n;
        n.kind = NodeKind::Load;
        n.dtype = li.dtype;
        n.input = input_of_.at(id);
        n.args = {linearize(idx, li.shape)};
        return add(n);
      }
      case OpKind::Cast: return cast(value(operand(0), idx), rt);
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::FloorDiv:
      case OpKind::Mod:
      case OpKind::Pow:
      case OpKind::Max:
      case OpKind::Min:
      case OpKind::Atan2:
      case OpKind::BitAnd:
      case OpKind::BitOr:
      case OpKind::BitXor:
      case OpKind::Shl:
      case OpKind::Shr:
      case OpKind::Neg:
      case OpKind::BitNot:
      case OpKind::Abs:
      case OpKind::Sign:
      case OpKind::Relu:
      case OpKind::Square:
      case OpKind::Tanh:
      case OpKind::Exp:
      case OpKind::Log:
      case OpKind::Log1p:
      case OpKind::Sqrt:
      case OpKind::Rsqrt:
      case OpKind::Sin:
      case OpKind::Cos:
      case OpKind::Floor:
      case OpKind::Ceil:
      case OpKind::Round:
      case OpKind::Sigmoid: {
        std::vector<int> args;
        for (size_t k = 0; k < in.operands.size(); ++k)
          args.push_back(cast(broadcast_operand(operand(k), shape, idx), rt));
        return op(in.op, args, rt);
      }
      case OpKind::Eq:
      case OpKind::Ne:
      case OpKind::Lt:
      case OpKind::Le:
      case OpKind::Gt:
      case OpKind::Ge: {
        int x = broadcast_operand(operand(0), shape, idx);
        int y = cast(broadcast_operand(operand(1), shape, idx), out_.nodes[x].dtype);
        return cast(op(in.op, {x, y}, DType::Bool), rt);
      }
      case OpKind::And:
      case OpKind::Or:
      case OpKind::Not: {
        std::vector<int> args;
        for (size_t k = 0; k < in.operands.size(); ++k)
          args.push_back(cast(broadcast_operand(operand(k), shape, idx), DType::Bool));
        return cast(op(in.op, args, DType::Bool), rt);
      }
      case OpKind::Where: {
        int c = cast(broadcast_operand(operand(0), shape, idx), DType::Bool);
        int a = cast(broadcast_operand(operand(1), shape, idx), rt);
        int b = cast(broadcast_operand(operand(2), shape, idx), rt);
        return select(c, a, b);
      }
      case OpKind::Clip: {
        std::vector<int> args;
        for (size_t k = 0; k < 3; ++k) args.push_back(cast(broadcast_operand(operand(k), shape, idx), rt));
        return op(OpKind::Clip, args, rt);
      }
      case OpKind::RandomUniform:
      case OpKind::RandomNormal:
      case OpKind::RandomInt: return random(in, id, idx);
      case OpKind::Slice: {
        std::vector<int64_t> starts = attr_ints(in, "starts"), stops = attr_ints(in, "stops"),
                             steps = attr_ints(in, "steps");
        std::vector<int> ii = idx;
        for (size_t d = 0; d < starts.size() && d < xs.size(); ++d) {
          if (steps[d] == 0) throw Unsupported{"slice step 0"};
          SliceBounds r = resolve_slice(starts[d], stops[d], steps[d], xs[d]);
          ii[d] = index(IndexOp::Add, iconst(r.start), index(IndexOp::Mul, idx[d], iconst(r.step)));
        }
        return value(operand(0), ii);
      }
      case OpKind::Gather: {
        const int64_t ax = normalize_axis(attr_int(in, "axis", 0), static_cast<int64_t>(xs.size()));
        std::vector<int64_t> ix = attr_ints(in, "indices");
        const int64_t n = xs[ax];
        for (int64_t& i : ix) {
          if (i < 0) i += n;
          if (i < 0 || i >= n) throw Unsupported{"a gather index out of range (the interpreter reports it)"};
        }
        std::vector<int> ii = idx;
        bool affine = ix.size() >= 1;
        const int64_t step = ix.size() >= 2 ? ix[1] - ix[0] : 0;
        for (size_t j = 0; j < ix.size() && affine; ++j) affine = ix[j] == ix[0] + step * static_cast<int64_t>(j);
        if (affine) {
          ii[ax] = index(IndexOp::Add, iconst(ix[0]), index(IndexOp::Mul, idx[ax], iconst(step)));
        } else {
          ConstTable tab;
          tab.dtype = DType::I64;
          tab.count = static_cast<int64_t>(ix.size());
          tab.bytes.resize(ix.size() * 8);
          std::memcpy(tab.bytes.data(), ix.data(), ix.size() * 8);
          ii[ax] = table_node(std::move(tab), idx[ax]);
        }
        return value(operand(0), ii);
      }
      case OpKind::DynamicIndex: {
        // The read is clamped into the dimension, so it stays in bounds whatever the index; the row's
        // check (LoopNest::checks) fails the kernel before any result is written when it was outside.
        const int64_t ax = normalize_axis(attr_int(in, "axis", 0), static_cast<int64_t>(xs.size()));
        const int j = run_time_index(id).first;
        std::vector<int> ii = idx;
        ii.insert(ii.begin() + ax, index(IndexOp::Max, index(IndexOp::Min, j, iconst(xs[ax] - 1)), iconst(0)));
        return value(operand(0), ii);
      }
      case OpKind::Reshape:
      case OpKind::Squeeze:
      case OpKind::ExpandDims: {
        if (count(xs) != count(shape)) throw Unsupported{"a reshape that changes the element count"};
        // Shapes equal up to unit dims map index to index; otherwise go through the flat index.
        std::vector<int> kept;
        std::vector<int64_t> a, b;
        for (size_t d = 0; d < shape.size(); ++d)
          if (shape[d] != 1) {
            kept.push_back(idx[d]);
            a.push_back(shape[d]);
          }
        for (int64_t d : xs)
          if (d != 1) b.push_back(d);
        if (a == b) {
          std::vector<int> ii;
          size_t k = 0;
          for (int64_t d : xs) ii.push_back(d == 1 ? iconst(0) : kept[k++]);
          return value(operand(0), ii);
        }
        return value(operand(0), delinearize(linearize(idx, shape), xs));
      }
      case OpKind::Transpose: {
        std::vector<int64_t> perm = attr_ints(in, "perm");
        std::vector<int> ii(xs.size());
        for (size_t i = 0; i < perm.size(); ++i) ii.at(static_cast<size_t>(perm[i])) = idx[i];
        return value(operand(0), ii);
      }
      case OpKind::Stack: {
        const int64_t ax = normalize_axis(attr_int(in, "axis", 0), static_cast<int64_t>(xs.size()), true);
        std::vector<int> ii = idx;
        ii.erase(ii.begin() + ax);
        int r = cast(value(operand(in.operands.size() - 1), ii), rt);
        for (size_t k = in.operands.size() - 1; k-- > 0;) {
          int c = op(OpKind::Eq, {idx[ax], iconst(static_cast<int64_t>(k))}, DType::Bool);
          r = select(c, cast(value(operand(k), ii), rt), r);
        }
        return r;
      }
      case OpKind::Concat: {
        const int64_t ax = normalize_axis(attr_int(in, "axis", -1), static_cast<int64_t>(xs.size()));
        std::vector<int64_t> offs;
        int64_t off = 0;
        for (int o : in.operands) {
          offs.push_back(off);
          off += type_of(o).shape.at(ax);
        }
        auto part = [&](size_t k) {
          std::vector<int> ii = idx;
          int64_t n = type_of(operand(k)).shape.at(ax);
          int local = index(IndexOp::Max, index(IndexOp::Sub, idx[ax], iconst(offs[k])), iconst(0));
          ii[ax] = index(IndexOp::Min, local, iconst(std::max<int64_t>(n - 1, 0)));
          return cast(value(operand(k), ii), rt);
        };
        int r = part(in.operands.size() - 1);
        for (size_t k = in.operands.size() - 1; k-- > 0;) {
          if (type_of(operand(k)).shape.at(ax) == 0) continue;
          int c = op(OpKind::Lt, {idx[ax], iconst(offs[k + 1])}, DType::Bool);
          r = select(c, part(k), r);
        }
        return r;
      }
      case OpKind::UnpackBits: {
        if (type_of(operand(0)).dtype != DType::U8) throw Unsupported{"unpack_bits of a non-u8 tensor"};
        if (int w = unpack_bits_from_word(operand(0), idx); w >= 0) return w;
        std::vector<int> ii = idx;
        int last = idx.back();
        ii.back() = index(IndexOp::Div, last, iconst(8));
        // Shift in 32 bits: x86 has vector shifts by per-lane counts for 32-bit lanes, not for bytes.
        int byte = cast(value(operand(0), ii), DType::U32);
        int shift = cast(index(IndexOp::Sub, iconst(7), index(IndexOp::Mod, last, iconst(8))), DType::U32);
        return cast(op(OpKind::BitAnd, {op(OpKind::Shr, {byte, shift}, DType::U32), iconst(1, DType::U32)}, DType::U32),
                    DType::U8);
      }
      case OpKind::PackBits: {
        std::vector<int> ii = idx;
        int acc = iconst(0, DType::U8);
        for (int k = 0; k < 8; ++k) {
          ii.back() = index(IndexOp::Add, index(IndexOp::Mul, idx.back(), iconst(8)), iconst(k));
          int bit = cast(value(operand(0), ii), DType::Bool);
          acc = op(OpKind::BitOr, {acc, select(bit, iconst(1 << (7 - k), DType::U8), iconst(0, DType::U8))}, DType::U8);
        }
        return acc;
      }
      case OpKind::OneHot: {
        std::vector<int> ii(idx.begin(), idx.end() - 1);
        int x = cast(value(operand(0), ii), DType::I64);
        int hit = op(OpKind::Eq, {x, idx.back()}, DType::Bool);
        return cast(hit, rt);
      }
      case OpKind::Sum:
      case OpKind::Prod:
      case OpKind::Mean:
      case OpKind::ReduceMax:
      case OpKind::ReduceMin: return reduce(in, idx);
      case OpKind::ConvertImageDtype:
      case OpKind::Normalize:
      case OpKind::OneHotColors:
        try {
          if (in.op == OpKind::ConvertImageDtype) return convert_image_dtype(value(operand(0), idx), rt);
          if (in.op == OpKind::Normalize) return normalize(in, idx);
          return one_hot_colors(in, idx);
        } catch (const UnsupportedHere& e) {
          throw Unsupported{fmt::format("{}: {}", where(in, id), e.why)};
        }
      // Not compiled: check_instr refuses these first (the op table gives them no LLVM lowering); a
      // const is always folded.
      case OpKind::Const:
      case OpKind::DynamicSlice:
      case OpKind::Argmax:
      case OpKind::Size:
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
      case OpKind::RgbToGrayscale:
      case OpKind::DistanceTransform:
      case OpKind::ConvertNormalize:
      case OpKind::RandomFlipConvertNormalize:
      case OpKind::Strip:
      case OpKind::Split:
      case OpKind::ToNumber: break;
    }
    throw Unsupported{fmt::format("op `{}` is not compiled", op_name(in.op))};
  }

  // convert_image_dtype as runtime/image/transforms.cpp computes it, for the pairs an image pipeline
  // uses: integer pixels to floats (x * (1 / max) in the float type's compute type: f32 for f16 and
  // bf16, the scale rounded to it) and floats to floats (a cast). Floats to integers (a saturating
  // scale) and integers to integers (a shift of ranges) stay in the interpreter.
  int convert_image_dtype(int x, DType to) {
    const DType from = out_.nodes[x].dtype;
    if (from == to) return x;
    if (is_float(from) && is_float(to)) return cast(x, to);
    if (!is_integer(from) || from == DType::Bool || !is_float(to))
      throw UnsupportedHere{fmt::format("convert_image_dtype from {} to {}", dtype_name(from), dtype_name(to))};
    double max = 0;
    switch (from) {
      case DType::U8: max = 255.0; break;
      case DType::I8: max = 127.0; break;
      case DType::U16: max = 65535.0; break;
      case DType::I16: max = 32767.0; break;
      case DType::U32: max = 4294967295.0; break;
      case DType::I32: max = 2147483647.0; break;
      case DType::U64: max = 18446744073709551615.0; break;
      case DType::I64: max = 9223372036854775807.0; break;
      default: throw UnsupportedHere{fmt::format("convert_image_dtype from {}", dtype_name(from))};
    }
    const DType compute = to == DType::F64 ? DType::F64 : DType::F32;
    Node k;
    k.kind = NodeKind::Const;
    k.dtype = compute;
    k.fval = compute == DType::F32 ? static_cast<double>(static_cast<float>(1.0 / max)) : 1.0 / max;
    const int scale = add(k);
    return cast(op(OpKind::Mul, {cast(x, compute), scale}, compute), to);
  }

  // normalize(x, mean, std): (f32(x) - mean[c]) / std[c] in f32, c the channel (the last axis); mean
  // and std hold one value or one per channel (runtime/image/transforms.cpp).
  int normalize(const Instr& in, const std::vector<int>& idx) {
    if (in.type.dtype != DType::F32 || idx.empty()) throw UnsupportedHere{"normalize to other than f32 pixels"};
    const int64_t channels = in.type.shape.back();
    auto per_channel = [&](size_t k) {
      const auto& shape = type_of(in.operands.at(k)).shape;
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<int> ii(shape.size(), iconst(0));
      if (n != 1) {
        if (shape.size() != 1 || n != channels) throw UnsupportedHere{"normalize's mean or std is not one per channel"};
        ii[0] = idx.back();
      }
      return cast(value(in.operands.at(k), ii), DType::F32);
    };
    const int x = cast(value(in.operands.at(0), idx), DType::F32);
    return op(OpKind::Div, {op(OpKind::Sub, {x, per_channel(1)}, DType::F32), per_channel(2)}, DType::F32);
  }

  // one_hot_colors(label, colors): 1.0 where the pixel's RGB equals colour j, else 0.0 (a colour
  // listed twice sets both channels, as the interpreter does). Colours given in the spec only: a
  // class_dict.csv is read when the run starts, and a kernel compiled before must not bake in a file
  // that may change.
  int one_hot_colors(const Instr& in, const std::vector<int>& idx) {
    const Value* colors = find_attr(in, "colors");
    if (!colors || colors->kind != Value::List)
      throw UnsupportedHere{"one_hot_colors with colours read from a file when the run starts"};
    const int x = in.operands.at(0);
    if (type_of(x).dtype != DType::U8 || type_of(x).shape.empty() || type_of(x).shape.back() != 3 ||
        static_cast<int64_t>(colors->items.size()) != in.type.shape.back())
      throw UnsupportedHere{"one_hot_colors of other than u8 RGB pixels"};
    ConstTable keys;
    keys.dtype = DType::U32;
    keys.count = static_cast<int64_t>(colors->items.size());
    for (const Value& rgb : colors->items) {
      if (rgb.items.size() != 3) throw UnsupportedHere{"one_hot_colors: a colour is not [r, g, b]"};
      const uint32_t key = (static_cast<uint32_t>(rgb.items[0].i & 0xFF) << 16) |
                           (static_cast<uint32_t>(rgb.items[1].i & 0xFF) << 8) |
                           static_cast<uint32_t>(rgb.items[2].i & 0xFF);
      for (int byte = 0; byte < 4; ++byte) keys.bytes.push_back(static_cast<uint8_t>(key >> (8 * byte)));
    }
    // One table per instruction, however many times its value is asked for.
    auto [it, fresh] = colour_tables_.try_emplace(&in, static_cast<int>(nest_.tables.size()));
    if (fresh) nest_.tables.push_back(std::move(keys));
    Node table;
    table.kind = NodeKind::Table;
    table.dtype = DType::U32;
    table.table = it->second;
    table.args = {idx.back()};
    const int colour = add(table);
    std::vector<int> ii(idx.begin(), idx.end() - 1);
    auto channel = [&](int c) {
      std::vector<int> at = ii;
      at.push_back(iconst(c));
      return cast(value(x, at), DType::U32);
    };
    int key = op(OpKind::Shl, {channel(0), iconst(16, DType::U32)}, DType::U32);
    key = op(OpKind::BitOr, {key, op(OpKind::Shl, {channel(1), iconst(8, DType::U32)}, DType::U32)}, DType::U32);
    key = op(OpKind::BitOr, {key, channel(2)}, DType::U32);
    return cast(op(OpKind::Eq, {key, colour}, DType::Bool), DType::F32);
  }

  // sum / prod / mean / reduce_max / reduce_min over the `axis` attribute (all element axes without
  // it): one Reduce node over the reduced dims flattened in row-major order (the interpreter's order).
  int reduce(const Instr& in, const std::vector<int>& idx) {
    const int x = in.operands.at(0);
    const auto& xs = type_of(x).shape;
    const DType xt = type_of(x).dtype;
    const int64_t rank = static_cast<int64_t>(xs.size());
    std::vector<bool> reduced(xs.size(), find_attr(in, "axis") == nullptr);
    if (find_attr(in, "axis"))
      for (int64_t ax : attr_ints(in, "axis")) reduced.at(static_cast<size_t>(normalize_axis(ax, rank))) = true;
    std::vector<int64_t> rshape;
    for (size_t d = 0; d < xs.size(); ++d)
      if (reduced[d]) rshape.push_back(xs[d]);
    const int rv = out_.num_vars++;
    std::vector<int> inner = delinearize(var(rv), rshape);
    std::vector<int> xi;
    size_t k = 0, o = 0;
    for (size_t d = 0; d < xs.size(); ++d) xi.push_back(reduced[d] ? inner[k++] : idx.at(o++));
    Node n;
    n.kind = NodeKind::Reduce;
    n.var = rv;
    n.ival = count(rshape);
    n.arg_dtype = xt;
    n.args = {value(x, xi)};
    const DType rt = in.type.dtype;
    if (in.op == OpKind::ReduceMax || in.op == OpKind::ReduceMin) {
      n.reduce_op = in.op == OpKind::ReduceMax ? ReduceOp::Max : ReduceOp::Min;
      n.dtype = xt;
      return cast(add(n), rt);
    }
    n.reduce_op = in.op == OpKind::Prod ? ReduceOp::Prod : ReduceOp::Sum;
    const bool float_acc = is_float(xt) || in.op == OpKind::Mean;
    n.dtype = float_acc ? DType::F64 : DType::U64;
    int acc = add(n);
    if (in.op == OpKind::Mean) {
      Node c;
      c.kind = NodeKind::Const;
      c.dtype = DType::F64;
      c.fval = static_cast<double>(n.ival);
      return cast(op(OpKind::Div, {acc, add(c)}, DType::F64), rt);
    }
    return float_acc ? cast(acc, rt) : cast(cast(acc, DType::I64), rt);
  }

  // random_uniform / random_normal / random_int: the interpreter's formulas over per-row draws.
  int random(const Instr& in, int id, const std::vector<int>& idx) {
    const auto& shape = in.type.shape;
    const DType rt = in.type.dtype;
    RandomDraws r;
    r.has_seed = find_attr(in, "seed") != nullptr;
    r.seed = static_cast<uint64_t>(attr_int(in, "seed", 0));
    r.op_id = static_cast<uint64_t>(attr_int(in, "op_id", 0));
    if (attr_ints(in, "shape") != shape)
      throw Unsupported{fmt::format("{}: its shape attribute differs from its type", where(in, id))};
    r.count = count(shape);
    if (r.count > kMaxRandomDraws)
      throw Unsupported{
          fmt::format("{} draws {} values per element (over {})", where(in, id), r.count, kMaxRandomDraws)};
    // Operand k or the default value, as the interpreter's operand_or: cast to `dt` first.
    auto operand_or = [&](size_t k, double fallback, DType dt) {
      if (k < in.operands.size()) return cast(broadcast_operand(in.operands[k], shape, idx), dt);
      Node n;
      n.kind = NodeKind::Const;
      n.dtype = dt;
      if (is_float(dt)) n.fval = fallback;
      else n.ival = static_cast<int64_t>(fallback);
      return add(n);
    };
    auto draw = [&](DType dt) {
      r.dtype = dt;
      auto it = random_of_.find(id);
      int rid;
      if (it == random_of_.end()) {
        nest_.randoms.push_back(r);
        rid = static_cast<int>(nest_.randoms.size()) - 1;
        random_of_[id] = rid;
      } else {
        rid = it->second;
      }
      Node n;
      n.kind = NodeKind::Random;
      n.dtype = dt;
      n.random = rid;
      n.args = {linearize(idx, shape)};
      return add(n);
    };
    if (in.op == OpKind::RandomUniform) {
      const DType u = rt == DType::F64 ? DType::F64 : DType::F32;
      r.kind = u == DType::F64 ? kRandomUniformF64 : kRandomUniformF32;
      int x = draw(u);
      int lo = cast(operand_or(0, 0.0, rt), u), hi = cast(operand_or(1, 1.0, rt), u);
      return cast(op(OpKind::Add, {lo, op(OpKind::Mul, {op(OpKind::Sub, {hi, lo}, u), x}, u)}, u), rt);
    }
    if (in.op == OpKind::RandomNormal) {
      r.kind = kRandomNormal;
      int z = draw(DType::F64);
      int mean = operand_or(0, 0.0, DType::F64), sd = operand_or(1, 1.0, DType::F64);
      return cast(op(OpKind::Add, {mean, op(OpKind::Mul, {sd, z}, DType::F64)}, DType::F64), rt);
    }
    if (in.op == OpKind::RandomInt) {
      if (in.operands.size() < 2) throw Unsupported{fmt::format("{} needs lo and hi", where(in, id))};
      int64_t bound[2];
      for (int k = 0; k < 2; ++k) {
        const Tensor& t = folded_[in.operands[k]];
        if (!t.defined() || t.num_elements() != 1)
          throw Unsupported{fmt::format("{}: bounds computed per element are not compiled", where(in, id))};
        bound[k] = cast_tensor(t, DType::I64).data<int64_t>()[0];
      }
      if (bound[0] >= bound[1])
        throw Unsupported{fmt::format("{}: lo >= hi (the interpreter reports it)", where(in, id))};
      r.kind = kRandomInt;
      r.lo = bound[0];
      r.hi = bound[1];
      return cast(draw(DType::I64), rt);
    }
    throw Unsupported{fmt::format("{}: op `{}` is not compiled", where(in, id), op_name(in.op))};
  }

  const ExprFunction& fn_;
  const std::vector<Tensor>& folded_;
  const std::vector<int>& input_of_;
  LoopNest& nest_;
  LoopOutput& out_;
  std::map<std::pair<int, std::vector<int>>, int> memo_;
  std::map<std::string, int> cse_;
  std::map<int, int> table_of_;
  std::map<const Instr*, int> colour_tables_;  // one_hot_colors: instruction -> its table of colour keys
  std::map<int, int> random_of_;
};

bool supported_dtype(DType t) { return t != DType::F16 && t != DType::BF16 && t != DType::Bytes; }

// Per instruction: whether it is the first cast of a rounding, cast(cast(x: f32, bf16 or f16), f32),
// whose 16-bit value nothing but casts back to f32 read and no result is (what mixed precision's step
// passes put in expr nodes: compiler/train/passes/fuse_round_into_expr.cpp). Its Cast node's 16-bit
// value is carried as the f32 it represents, so the pair is one rounding in f32 registers.
std::vector<bool> rounding_casts(const ExprFunction& fn, const std::vector<bool>& live) {
  const size_t n = fn.body.size();
  std::vector<bool> r(n, false);
  auto narrow = [](DType t) { return t == DType::BF16 || t == DType::F16; };
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = fn.body[i];
    r[i] = in.op == OpKind::Cast && narrow(in.type.dtype) &&
           fn.body.at(static_cast<size_t>(in.operands.at(0))).type.dtype == DType::F32;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    const Instr& in = fn.body[i];
    for (int o : in.operands)
      if (r[static_cast<size_t>(o)] && !(in.op == OpKind::Cast && in.type.dtype == DType::F32))
        r[static_cast<size_t>(o)] = false;
  }
  for (const auto& [name, id] : fn.results) r.at(static_cast<size_t>(id)) = false;
  return r;
}

// Checks one live, per-row instruction; throws Unsupported with the reason.
void check_instr(const Instr& in, int id, bool rounding_cast) {
  if (!in.type.is_tensor() || !in.type.fully_known())
    throw Unsupported{
        fmt::format("{} has type {} (not a tensor of known shape)", where(in, id), type_to_string(in.type))};
  if (!supported_dtype(in.type.dtype) && !rounding_cast)
    throw Unsupported{fmt::format("{} has dtype {}", where(in, id), dtype_name(in.type.dtype))};
  const OpInfo& info = op_info(in.op);
  // The op table says which ops the loop nests lower; compute() has the code for exactly those.
  if (!info.compiled_by(OpBackend::Llvm))
    throw Unsupported{fmt::format("{}: op `{}` is not compiled", where(in, id), info.name)};
  if (info.has(OpFlag::Arithmetic) || info.has(OpFlag::UnaryMath)) {
    const DType t = in.type.dtype;
    const bool bitwise = info.has(OpFlag::Bitwise);  // bool and integers
    if (t == DType::Bool && !bitwise)
      throw Unsupported{fmt::format("{}: arithmetic on bool is not compiled", where(in, id))};
    if ((info.has(OpFlag::FloatOnly) && !is_float(t)) || (bitwise && is_float(t)) ||
        (info.has(OpFlag::IntegerOnly) && !is_integer(t)))
      throw Unsupported{fmt::format("{} is not defined for {}", where(in, id), dtype_name(t))};
  }
}

}  // namespace

bool lower_to_loop_nest(const ExprFunction& fn, const std::vector<std::string>& in_fields, LoopNest& out,
                        std::string& why_not) {
  out = LoopNest{};
  out.name = fn.name;
  const size_t n = fn.body.size();
  try {
    // Live values and which of them depend on the row.
    std::vector<bool> live(n, false), per_row(n, false);
    for (const auto& [name, id] : fn.results) live.at(static_cast<size_t>(id)) = true;
    for (size_t i = n; i-- > 0;)
      if (live[i])
        for (int o : fn.body[i].operands) live.at(static_cast<size_t>(o)) = true;
    const std::vector<bool> rounding = rounding_casts(fn, live);
    std::vector<Tensor> folded(n);
    std::vector<int> input_of(n, -1);
    for (size_t i = 0; i < n; ++i) {
      const Instr& in = fn.body[i];
      if (!live[i]) continue;
      bool row = op_has(in.op, OpFlag::Input) || op_has(in.op, OpFlag::Random);
      for (int o : in.operands) row = row || per_row[static_cast<size_t>(o)];
      per_row[i] = row;
      if (!row) {
        // Fold with the interpreter's kernel: bit-identical to what it computes per chunk.
        const KernelInfo* k = find_kernel(in.op);
        if (!k) throw Unsupported{fmt::format("{}: no kernel to fold it", where(in, static_cast<int>(i)))};
        if (!in.type.is_tensor() || (!supported_dtype(in.type.dtype) && !rounding[i]))
          throw Unsupported{fmt::format("{} has type {}", where(in, static_cast<int>(i)), type_to_string(in.type))};
        KernelArgs args{in, {}, 0, 1, 0, 0, 0};
        for (int o : in.operands) args.in.push_back(folded[static_cast<size_t>(o)]);
        Tensor t = k->fn(args);
        if (t.dtype() != in.type.dtype) t = cast_tensor(t, in.type.dtype);
        if (t.num_elements() > kMaxTableElements)
          throw Unsupported{fmt::format("{} folds to {} elements (over {})", where(in, static_cast<int>(i)),
                                        t.num_elements(), kMaxTableElements)};
        folded[i] = t;
        continue;
      }
      check_instr(in, static_cast<int>(i), rounding[i]);
      if (in.op == OpKind::Param) {
        const Value* f = find_attr(in, "field");
        if (!f) throw Unsupported{fmt::format("{} has no field", where(in, static_cast<int>(i)))};
        auto it = std::find(in_fields.begin(), in_fields.end(), f->s);
        int fi = it != in_fields.end() ? static_cast<int>(it - in_fields.begin()) : in_fields.size() == 1 ? 0 : -1;
        if (fi < 0 && !in_fields.empty()) throw Unsupported{fmt::format("the input has no field `{}`", f->s)};
        LoopInput li;
        li.field = f->s;
        li.field_index = fi;
        li.dtype = in.type.dtype;
        li.shape = in.type.shape;
        li.elems = count(li.shape);
        out.inputs.push_back(li);
        input_of[i] = static_cast<int>(out.inputs.size()) - 1;
      }
    }
    for (const auto& [name, id] : fn.results) {
      const Instr& r = fn.body.at(static_cast<size_t>(id));
      if (!r.type.is_tensor() || !r.type.fully_known() || !supported_dtype(r.type.dtype))
        throw Unsupported{fmt::format("result `{}` has type {}", name, type_to_string(r.type))};
      LoopOutput lo;
      lo.name = name;
      lo.dtype = r.type.dtype;
      lo.shape = r.type.shape;
      lo.elems = count(lo.shape);
      out.outputs.push_back(std::move(lo));
    }
    for (size_t j = 0; j < fn.results.size(); ++j) {
      LoopOutput& lo = out.outputs[j];
      OutputBuilder b(fn, folded, input_of, out, lo);
      std::vector<int> idx;
      for (size_t d = 0; d < lo.shape.size(); ++d) idx.push_back(b.var(static_cast<int>(d) + 1));
      lo.num_vars = static_cast<int>(lo.shape.size()) + 1;
      lo.root = b.cast(b.value(fn.results[j].second, idx), lo.dtype);
    }
    // One check per live dynamic_index computed per row (a row-invariant one was folded above, and a
    // bad index there failed the fold, so the function is not compiled).
    for (size_t i = 0; i < n; ++i) {
      if (!live[i] || !per_row[i] || fn.body[i].op != OpKind::DynamicIndex) continue;
      LoopOutput check;
      check.name = where(fn.body[i], static_cast<int>(i)) + ": index in range";
      check.dtype = DType::Bool;
      OutputBuilder b(fn, folded, input_of, out, check);
      check.root = b.index_in_range(static_cast<int>(i));
      out.checks.push_back(std::move(check));
    }
  } catch (const Unsupported& u) {
    why_not = u.why;
    return false;
  } catch (const std::exception& e) {
    why_not = e.what();
    return false;
  }
  return true;
}

std::string_view index_op_name(IndexOp op) {
  switch (op) {
    case IndexOp::Add: return "add";
    case IndexOp::Sub: return "sub";
    case IndexOp::Mul: return "mul";
    case IndexOp::Div: return "div";
    case IndexOp::Mod: return "mod";
    case IndexOp::Min: return "min";
    case IndexOp::Max: return "max";
    case IndexOp::Lt: return "lt";
    case IndexOp::Select: return "select";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

std::string print_loop_nest(const LoopNest& nest) {
  std::string s = fmt::format("loops {}:\n", nest.name);
  for (size_t i = 0; i < nest.inputs.size(); ++i)
    s += fmt::format("  in{} {}: {}{}\n", i, nest.inputs[i].field, dtype_name(nest.inputs[i].dtype),
                     shape_to_spec(nest.inputs[i].shape));
  for (size_t i = 0; i < nest.tables.size(); ++i)
    s += fmt::format("  table{}: {}[{}]\n", i, dtype_name(nest.tables[i].dtype), nest.tables[i].count);
  for (size_t i = 0; i < nest.randoms.size(); ++i)
    s += fmt::format("  random{}: kind {} op_id {} {}[{}] per row\n", i, nest.randoms[i].kind, nest.randoms[i].op_id,
                     dtype_name(nest.randoms[i].dtype), nest.randoms[i].count);
  std::vector<std::pair<std::string, const LoopOutput*>> printed;
  for (const LoopOutput& o : nest.outputs)
    printed.emplace_back(
        fmt::format("  out {}: {}{} = n{}\n", o.name, dtype_name(o.dtype), shape_to_spec(o.shape), o.root), &o);
  for (const LoopOutput& c : nest.checks) printed.emplace_back(fmt::format("  check {} = n{}\n", c.name, c.root), &c);
  for (const auto& [head, op] : printed) {
    const LoopOutput& o = *op;
    s += head;
    for (size_t k = 0; k < o.nodes.size(); ++k) {
      const Node& n = o.nodes[k];
      std::string body;
      switch (n.kind) {
        case NodeKind::Var: body = n.var == 0 ? "row" : fmt::format("i{}", n.var); break;
        case NodeKind::Const: body = is_float(n.dtype) ? fmt::format("{}", n.fval) : fmt::format("{}", n.ival); break;
        case NodeKind::Load: body = fmt::format("in{}[n{}]", n.input, n.args[0]); break;
        case NodeKind::Table: body = fmt::format("table{}[n{}]", n.table, n.args[0]); break;
        case NodeKind::Index:
          body = fmt::format("idx.{} n{}", index_op_name(n.index_op), fmt::join(n.args, ", n"));
          break;
        case NodeKind::Op: body = fmt::format("{} n{}", op_name(n.op), fmt::join(n.args, ", n")); break;
        case NodeKind::Cast: body = fmt::format("cast n{}", n.args[0]); break;
        case NodeKind::Select: body = fmt::format("select n{}, n{}, n{}", n.args[0], n.args[1], n.args[2]); break;
        case NodeKind::Random: body = fmt::format("random{}[n{}]", n.random, n.args[0]); break;
        case NodeKind::Reduce:
          body = fmt::format("reduce.{} n{} over v{} < {}", reduce_op_name(n.reduce_op), n.args[0], n.var, n.ival);
          break;
      }
      s += fmt::format("    n{} = {} : {}\n", k, body, dtype_name(n.dtype));
    }
  }
  return s;
}

}  // namespace pipec::codegen

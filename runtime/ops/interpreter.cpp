#include "runtime/ops/interpreter.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include <fmt/format.h>

#include "runtime/ops/kernel.h"
#include "runtime/ops/tensor_util.h"

namespace pipec {

namespace {

struct Val {
  enum Kind { Invariant, Rows, Ragged } kind = Invariant;
  Tensor t;                  // Invariant: [...element]; Rows: [rows, ...element]
  std::vector<Tensor> rows;  // Ragged: one element tensor per row
};

Shape prepend(int64_t d, const Shape& s, size_t ones = 0) {
  Shape out{d};
  out.insert(out.end(), ones, 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// Per-row element tensors: dense [rows, ...] when they all have one shape, ragged otherwise.
Val from_rows(std::vector<Tensor> rows, DType dtype, const Shape& elem_hint) {
  Val v;
  bool same = true;
  for (size_t r = 1; r < rows.size() && same; ++r) same = rows[r].shape() == rows[0].shape();
  if (same) {
    v.kind = Val::Rows;
    v.t = stack_rows(rows, dtype, elem_hint);
  } else {
    v.kind = Val::Ragged;
    v.rows = std::move(rows);
  }
  return v;
}

// A `bytes` column read as u8[n] (fixed-length byte features): each string becomes a row of bytes.
Val bytes_as_u8(const Tensor& col, const Type& type) {
  std::vector<Tensor> rows;
  const int64_t want = type.shape.empty() ? -1 : type.shape[0];
  for (int64_t r = 0; r < col.num_elements(); ++r) {
    std::string_view s = col.str(r);
    if (want >= 0 && static_cast<int64_t>(s.size()) != want)
      throw OpError(fmt::format("element {} has {} bytes, the type says {}", r, s.size(), want));
    Tensor t = Tensor::empty(DType::U8, {static_cast<int64_t>(s.size())});
    if (!s.empty()) std::memcpy(t.raw(), s.data(), s.size());
    rows.push_back(std::move(t));
  }
  return from_rows(std::move(rows), DType::U8, {0});
}

class Interpreter {
 public:
  Interpreter(const ExprFunction& fn, const std::vector<std::string>& fields, const Chunk& in, const EvalContext& ctx)
      : fn_(fn), fields_(fields), in_(in), ctx_(ctx) {}

  std::vector<Column> run() {
    const size_t n = fn_.body.size();
    // Only what the results need runs; each value is released after its last use.
    std::vector<bool> live(n, false);
    for (const auto& [name, id] : fn_.results) live.at(static_cast<size_t>(id)) = true;
    for (size_t i = n; i-- > 0;)
      if (live[i])
        for (int o : fn_.body[i].operands) live.at(static_cast<size_t>(o)) = true;
    std::vector<size_t> last_use(n, 0);
    for (size_t i = 0; i < n; ++i)
      if (live[i])
        for (int o : fn_.body[i].operands) last_use[static_cast<size_t>(o)] = i;
    for (const auto& [name, id] : fn_.results) last_use[static_cast<size_t>(id)] = SIZE_MAX;
    vals_.assign(n, Val{});
    for (size_t i = 0; i < n; ++i) {
      const Instr& instr = fn_.body[i];
      if (!live[i]) continue;  // dead code, unused fields
      try {
        vals_[i] = instr.op == OpKind::Param ? param(instr) : eval(instr);
        check_result(instr, vals_[i]);
      } catch (const KernelError&) {
        throw;
      } catch (const OpError& e) {
        throw KernelError(instr.loc, std::string(op_name(instr.op)), e.what());
      } catch (const std::logic_error& e) {  // invalid_argument, out_of_range, length_error from helpers
        throw KernelError(instr.loc, std::string(op_name(instr.op)), e.what());
      }
      for (int o : instr.operands)
        if (last_use[static_cast<size_t>(o)] == i) vals_[static_cast<size_t>(o)] = Val{};
    }
    std::vector<Column> out;
    for (const auto& [name, id] : fn_.results) {
      stack_if_known(id);
      out.push_back(to_column(vals_.at(static_cast<size_t>(id)), fn_.body[id].type));
    }
    return out;
  }

 private:
  Val param(const Instr& instr) {
    const Value* f = find_attr(instr, "field");
    if (!f) throw OpError("missing attribute `field`");
    auto it = std::find(fields_.begin(), fields_.end(), f->s);
    size_t idx;
    if (it != fields_.end()) idx = static_cast<size_t>(it - fields_.begin());
    else if (fields_.size() == 1) idx = 0;  // a lambda over a single-field element names it by its parameter
    else throw OpError(fmt::format("the input has no field `{}`", f->s));
    if (idx >= in_.columns.size()) throw OpError(fmt::format("the chunk has no column for field `{}`", f->s));
    const Column& col = in_.columns[idx];
    if (col.ragged) {
      if (static_cast<int64_t>(col.rows.size()) != in_.rows)
        throw OpError(fmt::format("column `{}` has {} rows, the chunk {}", f->s, col.rows.size(), in_.rows));
      if (col.rows.empty()) return Val{Val::Rows, Tensor::empty(instr.type.dtype, {0}), {}};
      // A field of unknown dims (decoded images) stays one tensor per row: per-row ops (a crop) read
      // the rows where they are, and stacking equally sized images would copy each whole image only
      // for the crop to read a window of it (a sixth of seed 003's pipeline). Whole-column ops get
      // the rows per row, or stacked once a value's shape is known.
      if (!instr.type.fully_known()) {
        Val v;
        v.kind = Val::Ragged;
        v.rows = col.rows;
        return v;
      }
      Val v = from_rows(col.rows, col.rows[0].dtype(), {});
      return v;
    }
    const Tensor& t = col.dense;
    if (t.rank() < 1 || t.shape()[0] != in_.rows)
      throw OpError(
          fmt::format("column `{}` has shape {}, the chunk has {} rows", f->s, shape_to_string(t.shape()), in_.rows));
    if (t.dtype() == DType::Bytes && instr.type.dtype == DType::U8 && t.rank() == 1) return bytes_as_u8(t, instr.type);
    return Val{Val::Rows, finish(instr, t), {}};
  }

  Val eval(const Instr& instr) {
    const KernelInfo* k = find_kernel(instr.op);
    if (!k) throw OpError("the interpreter has no kernel for this op");
    // Per-row results of a known shape are kept one tensor per row (eval_per_row); an op that works on
    // whole columns gets them stacked here, once.
    if (k->kind != KernelKind::PerRow)
      for (int o : instr.operands) stack_if_known(o);
    bool any_rows = false, any_ragged = false;
    for (int o : instr.operands) {
      const Val& v = vals_.at(static_cast<size_t>(o));
      any_rows = any_rows || v.kind == Val::Rows;
      any_ragged = any_ragged || v.kind == Val::Ragged;
    }
    if (any_ragged) return eval_per_row(instr, *k);
    if (k->kind == KernelKind::PerRow) {
      // Shapes depend on the data: one call per element, unless every operand is row-invariant and
      // nothing random is drawn (then one call serves every row).
      if (any_rows || find_attr(instr, "op_id")) return eval_per_row(instr, *k);
      KernelArgs args{instr, {}, 0, 1, ctx_.seed, in_.first_index, in_.epoch, &ctx_.spec_dir, Tensor()};
      for (int o : instr.operands) args.in.push_back(vals_[o].t);
      return Val{Val::Invariant, finish(instr, k->fn(args)), {}};
    }
    const bool lead = k->kind == KernelKind::Random || any_rows;
    KernelArgs args{instr, {}, lead ? 1 : 0, in_.rows, ctx_.seed, in_.first_index, in_.epoch, &ctx_.spec_dir, Tensor()};
    if (!lead) {
      for (int o : instr.operands) args.in.push_back(vals_[o].t);
      return Val{Val::Invariant, finish(instr, k->fn(args)), {}};
    }
    if (k->kind == KernelKind::Structural) {
      for (int o : instr.operands) {
        const Val& v = vals_[o];
        args.in.push_back(v.kind == Val::Rows ? v.t : broadcast_rows(v.t, in_.rows));
      }
    } else {
      // Align element shapes to the result's rank so plain numpy broadcasting sees the rows dim first.
      int64_t er = instr.type.rank();
      for (int o : instr.operands) {
        const Val& v = vals_[o];
        er = std::max(er, v.t.rank() - (v.kind == Val::Rows ? 1 : 0));
      }
      for (int o : instr.operands) {
        const Val& v = vals_[o];
        if (v.kind == Val::Rows) {
          Shape elem(v.t.shape().begin() + 1, v.t.shape().end());
          args.in.push_back(v.t.reshaped(prepend(in_.rows, elem, static_cast<size_t>(er) - elem.size())));
        } else {
          args.in.push_back(v.t.reshaped(prepend(1, v.t.shape(), static_cast<size_t>(er - v.t.rank()))));
        }
      }
    }
    Tensor out = finish(instr, k->fn(args));
    if (out.rank() < 1 || out.shape()[0] != in_.rows)
      throw OpError(
          fmt::format("internal: per-row result has shape {} for {} rows", shape_to_string(out.shape()), in_.rows));
    return Val{Val::Rows, std::move(out), {}};
  }

  // The slow, general path: one kernel call per row on element tensors.
  Val eval_per_row(const Instr& instr, const KernelInfo& k) {
    // A kernel that fills rows in place gets each element's row of the stacked result (no stacking
    // copy afterwards: for seed 004's fused label decode that copy was a fifth of the pipeline).
    const bool fill = k.fills_rows && instr.type.fully_known() && instr.type.dtype != DType::Bytes;
    Tensor stacked = fill ? Tensor::empty(instr.type.dtype, prepend(in_.rows, instr.type.shape)) : Tensor();
    std::vector<Tensor> outs(static_cast<size_t>(fill ? 0 : in_.rows));
    for (int64_t r = 0; r < in_.rows; ++r) {
      KernelArgs args{instr, {}, 0, 1, ctx_.seed, in_.first_index + r, in_.epoch, &ctx_.spec_dir, Tensor()};
      if (fill) args.into = stacked.row_view(r);
      for (int o : instr.operands) {
        const Val& v = vals_[o];
        // A row of a dense value is a view, not a copy: the kernel only reads it, and image rows are
        // large (copying them was a tenth of seed 003's pipeline).
        args.in.push_back(v.kind == Val::Ragged                                ? v.rows[r]
                          : v.kind == Val::Rows && v.t.dtype() != DType::Bytes ? v.t.row_view(r)
                          : v.kind == Val::Rows                                ? row_of(v.t, r)
                                                                               : v.t);
      }
      try {
        Tensor got = finish(instr, k.fn(args));
        if (!fill) {
          outs[r] = std::move(got);
        } else if (got.raw() != args.into.raw()) {  // the kernel made its own tensor this time
          check_shape(instr, got.shape());
          std::memcpy(args.into.raw(), got.raw(), got.byte_size());
        }
      } catch (const OpError& e) {
        throw OpError(fmt::format("element {}: {}", in_.first_index + r, e.what()));
      }
    }
    if (fill) return Val{Val::Rows, std::move(stacked), {}};
    // A result whose type has unknown dims (a decoded image) stays one tensor per row, and so does the
    // result of a per-row op (a crop, a flip): stacking it would copy every image once more only for
    // the next per-row op to copy it out again. Whole-column ops and the results stack what they need.
    if (!instr.type.fully_known() || k.kind == KernelKind::PerRow) {
      Val v;
      v.kind = Val::Ragged;
      v.rows = std::move(outs);
      return v;
    }
    return from_rows(std::move(outs), instr.type.dtype, {});
  }

  static Tensor finish(const Instr& instr, Tensor t) {
    if (t.dtype() != instr.type.dtype && t.dtype() != DType::Bytes && instr.type.dtype != DType::Bytes)
      return cast_tensor(t, instr.type.dtype);
    return t;
  }

  // The element shape must agree with the static type wherever that is known.
  static void check_shape(const Instr& instr, const Shape& elem) {
    const auto& want = instr.type.shape;
    bool ok = elem.size() == want.size();
    for (size_t d = 0; ok && d < want.size(); ++d) ok = want[d] < 0 || want[d] == elem[d];
    if (!ok)
      throw OpError(fmt::format("internal: result shape {} does not match the type {}", shape_to_string(elem),
                                type_to_string(instr.type)));
  }

  static void check_result(const Instr& instr, const Val& v) {
    if (v.kind == Val::Invariant) check_shape(instr, v.t.shape());
    else if (v.kind == Val::Rows) check_shape(instr, Shape(v.t.shape().begin() + 1, v.t.shape().end()));
    else
      for (const Tensor& t : v.rows) check_shape(instr, t.shape());
  }

  // A value kept one tensor per row whose type has a known shape becomes one [rows, ...] tensor.
  void stack_if_known(int o) {
    Val& v = vals_.at(static_cast<size_t>(o));
    const Type& t = fn_.body.at(static_cast<size_t>(o)).type;
    if (v.kind == Val::Ragged && t.fully_known()) v = from_rows(std::move(v.rows), t.dtype, t.shape);
  }

  Column to_column(const Val& v, const Type& type) const {
    Column c;
    const bool ragged = !type.fully_known();
    const int64_t rows = in_.rows;
    if (v.kind == Val::Ragged) {
      c.ragged = true;
      c.rows = v.rows;
    } else if (v.kind == Val::Invariant) {
      if (ragged) {
        c.ragged = true;
        c.rows.assign(static_cast<size_t>(rows), v.t);  // shares the one tensor
      } else {
        c.dense = broadcast_rows(v.t, rows);
      }
    } else if (ragged) {
      c.ragged = true;
      for (int64_t r = 0; r < rows; ++r) c.rows.push_back(row_of(v.t, r));
    } else {
      c.dense = v.t;
    }
    return c;
  }

  const ExprFunction& fn_;
  const std::vector<std::string>& fields_;
  const Chunk& in_;
  const EvalContext& ctx_;
  std::vector<Val> vals_;
};

std::vector<Column> empty_columns(const ExprFunction& fn) {
  std::vector<Column> out;
  for (const auto& [name, id] : fn.results) {
    const Type& t = fn.body.at(static_cast<size_t>(id)).type;
    Column c;
    if (!t.fully_known()) c.ragged = true;
    else c.dense = Tensor::zeros(t.dtype, prepend(0, t.shape));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<Column> run_function(const ExprFunction& fn, const std::vector<std::string>& in_fields, const Chunk& in,
                                 const EvalContext& ctx) {
  if (in.rows == 0) return empty_columns(fn);
  return Interpreter(fn, in_fields, in, ctx).run();
}

}  // namespace pipec

#include "compiler/lower/lower.h"

#include "compiler/lower/fuse_file_decode.h"

#include <climits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/sema/builtins.h"
#include "compiler/sema/const_eval.h"
#include "compiler/sema/promotion.h"
#include "runtime/ops/slice_bounds.h"

namespace pipec {

namespace {

// Builtin parameters that are compile-time attributes of an instruction rather than tensor operands.
const std::set<std::string> kStaticParams = {"shape",    "axis",       "depth",   "perm",     "height", "width",
                                             "seed",     "method",     "dtype",   "channels", "colors", "classes",
                                             "fraction", "max_pixels", "quality", "sep"};

// A lowered value: one SSA value, or a record of them (a lambda parameter, a record literal).
struct LValue {
  int id = -1;
  std::map<std::string, int> fields;  // record
  std::vector<std::string> order;     // record field order
  bool is_record() const { return id < 0; }
};

OpKind binary_op_kind(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return OpKind::Add;
    case BinaryOp::Sub: return OpKind::Sub;
    case BinaryOp::Mul: return OpKind::Mul;
    case BinaryOp::Div: return OpKind::Div;
    case BinaryOp::FloorDiv: return OpKind::FloorDiv;
    case BinaryOp::Mod: return OpKind::Mod;
    case BinaryOp::Pow: return OpKind::Pow;
    case BinaryOp::Eq: return OpKind::Eq;
    case BinaryOp::Ne: return OpKind::Ne;
    case BinaryOp::Lt: return OpKind::Lt;
    case BinaryOp::Le: return OpKind::Le;
    case BinaryOp::Gt: return OpKind::Gt;
    case BinaryOp::Ge: return OpKind::Ge;
    case BinaryOp::And: return OpKind::And;
    case BinaryOp::Or: return OpKind::Or;
    case BinaryOp::BitAnd: return OpKind::BitAnd;
    case BinaryOp::BitXor: return OpKind::BitXor;
    case BinaryOp::Shl: return OpKind::Shl;
    case BinaryOp::Shr: return OpKind::Shr;
  }
  throw std::logic_error("lowering: unknown binary operator");
}

// Lowers one map/filter body.
SpecLoc spec_loc(const Program& program, SourceRange r) {
  if (!r.valid()) return {};
  const SourceFile& f = program.sources.file(r.file);
  LineCol lc = f.line_col(r.begin);
  return SpecLoc{f.path(), lc.line, lc.col};
}

class FunctionLowering {
 public:
  FunctionLowering(const Program& program, ExprFunction& fn) : program_(program), fn_(fn) {}

  LValue lower_lambda(const LambdaExpr& lambda) {
    scopes_.emplace_back();
    for (size_t i = 0; i < lambda.params.size(); ++i) {
      const Type& t = lambda.param_types[i];
      LValue v;
      if (t.kind == TypeKind::Record) {
        for (const Field& f : *t.fields) {
          Instr p{OpKind::Param,
                  {},
                  {{"field", Value::make_string(f.name)}},
                  *f.type,
                  spec_loc(program_, lambda.param_ranges[i])};
          v.fields[f.name] = fn_.add(std::move(p));
          v.order.push_back(f.name);
        }
      } else {
        v.id = fn_.add(Instr{OpKind::Param,
                             {},
                             {{"field", Value::make_string(lambda.params[i])}},
                             t,
                             spec_loc(program_, lambda.param_ranges[i])});
      }
      scopes_.back()[lambda.params[i]] = v;
    }
    LValue r = lower(*lambda.body);
    scopes_.pop_back();
    return r;
  }

  // A model expression whose graph-valued parts (`leaves`) are already params of fn_.
  int lower_with_leaves(const Expr& e, const std::map<const Expr*, int>& leaves) {
    prebound_ = &leaves;
    int r = tensor(e);
    prebound_ = nullptr;
    return r;
  }

 private:
  int emit(OpKind op, std::vector<int> operands, std::map<std::string, Value> attrs, Type type, SourceRange loc) {
    type.weak = false;
    return fn_.add(Instr{op, std::move(operands), std::move(attrs), std::move(type), spec_loc(program_, loc)});
  }

  int emit_const(const Value& v, DType dtype, const std::vector<int64_t>& shape, SourceRange loc) {
    Value c = v.kind == Value::List ? v : convert_value(v, dtype);
    if (c.kind == Value::List) c.dtype = dtype;
    return emit(OpKind::Const, {}, {{"value", c}}, Type::tensor(dtype, shape), loc);
  }

  int cast_to(int id, DType dtype, SourceRange loc) {
    const Type& t = fn_.body[id].type;
    if (t.dtype == dtype) return id;
    // Casting a constant folds right away.
    if (fn_.body[id].op == OpKind::Const && fn_.body[id].attrs.at("value").kind != Value::List)
      return emit_const(fn_.body[id].attrs.at("value"), dtype, t.shape, loc);
    return emit(OpKind::Cast, {id}, {{"dtype", Value::make_symbol(std::string(dtype_name(dtype)))}},
                Type::tensor(dtype, t.shape), loc);
  }

  // A tensor operand wanted in `dtype`: weak constants are emitted directly in it.
  int operand(const Expr& e, DType dtype) {
    if (e.constant && e.type.is_tensor() && e.type.weak) return emit_const(*e.constant, dtype, e.type.shape, e.range);
    return cast_to(tensor(e), dtype, e.range);
  }

  int tensor(const Expr& e) {
    LValue v = lower(e);
    if (v.is_record()) throw std::logic_error("lowering: a record where a tensor was expected");
    return v.id;
  }

  LValue value(int id) {
    LValue v;
    v.id = id;
    return v;
  }

  LValue lower(const Expr& e) {
    if (prebound_)
      if (auto it = prebound_->find(&e); it != prebound_->end()) return value(it->second);
    // Anything sema folded to a constant is emitted as one.
    if (e.constant && e.type.is_tensor() && e.kind != ExprKind::Lambda)
      return value(emit_const(*e.constant, e.type.dtype, e.type.shape, e.range));
    switch (e.kind) {
      case ExprKind::Name: return lower_name(*e.as<NameExpr>());
      case ExprKind::Member: {
        auto& m = *e.as<MemberExpr>();
        LValue base = lower(*m.base);
        return value(base.fields.at(m.member));
      }
      case ExprKind::Block: {
        auto& b = *e.as<BlockExpr>();
        scopes_.emplace_back();
        for (const Stmt& s : b.stmts) scopes_.back()[s.name] = lower(*s.value);
        LValue r = lower(*b.result);
        scopes_.pop_back();
        return r;
      }
      case ExprKind::Record: {
        auto& r = *e.as<RecordExpr>();
        LValue out;
        for (const RecordFieldSyntax& f : r.fields) {
          int id;
          if (f.value) {
            id = tensor(*f.value);
          } else {
            LValue v = lookup(f.name);
            id = v.id;
          }
          out.fields[f.name] = id;
          out.order.push_back(f.name);
        }
        return out;
      }
      case ExprKind::Unary: {
        auto& u = *e.as<UnaryExpr>();
        int x = operand(*u.operand, e.type.dtype);
        std::optional<OpKind> op;
        switch (u.op) {
          case UnaryOp::Neg: op = OpKind::Neg; break;
          case UnaryOp::Not: op = OpKind::Not; break;
          case UnaryOp::BitNot: op = OpKind::BitNot; break;
          case UnaryOp::Plus: break;  // +x is x
        }
        if (!op) return value(x);
        return value(emit(*op, {x}, {}, e.type, e.range));
      }
      case ExprKind::Binary: return value(lower_binary(*e.as<BinaryExpr>()));
      case ExprKind::List: {
        auto& l = *e.as<ListExpr>();
        std::vector<int> items;
        for (auto& item : l.items) items.push_back(operand(*item, e.type.dtype));
        return value(emit(OpKind::Stack, items, {{"axis", Value::make_int(0)}}, e.type, e.range));
      }
      case ExprKind::Index: return value(lower_index(*e.as<IndexExpr>()));
      case ExprKind::Call: return lower_call(*e.as<CallExpr>(), nullptr);
      case ExprKind::Pipe: {
        auto& p = *e.as<PipeExpr>();
        if (p.rhs->kind == ExprKind::Call) return lower_call(*p.rhs->as<CallExpr>(), p.lhs.get());
        return lower_named_call(*p.rhs->as<NameExpr>(), nullptr, p.lhs.get(), e);
      }
      default: throw std::logic_error(fmt::format("lowering: unexpected expression kind {}", static_cast<int>(e.kind)));
    }
  }

  LValue lookup(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    throw std::logic_error("lowering: unbound name " + name);
  }

  LValue lower_name(const NameExpr& n) { return lookup(n.name); }

  int lower_binary(const BinaryExpr& b) {
    const Type& lt = b.lhs->type;
    const Type& rt = b.rhs->type;
    auto p = promote(lt.dtype, lt.weak, rt.dtype, rt.weak);
    DType operand_dtype = binary_operand_dtype(b.op, p ? p->dtype : b.type.dtype, b.type.dtype);
    int x = operand(*b.lhs, operand_dtype);
    int y = operand(*b.rhs, operand_dtype);
    return emit(binary_op_kind(b.op), {x, y}, {}, b.type, b.range);
  }

  // x[...]: one slice over every dimension for the constant items, then a gather for an index list,
  // then the items computed at run time (dynamic_index, dynamic_slice), then the dimensions selected by
  // constant integers are dropped: one reshape when the result's shape is known, else one squeeze per
  // dimension (a reshape to a shape with several `?` could not tell which unit dimensions to drop).
  // The run-time items go from the last axis down, so that an axis dynamic_index removes renumbers
  // none still to come. A constant index on a dimension of unknown size is checked at run time too
  // (dynamic_index), so that it fails naming the index.
  int lower_index(const IndexExpr& ix) {
    int base = tensor(*ix.base);
    const Type& bt = ix.base->type;
    int64_t rank = bt.rank();
    int consumed = 0;
    for (const IndexItem& it : ix.items)
      if (it.kind != IndexItem::Ellipsis) ++consumed;
    Value starts = Value::make_list(), stops = Value::make_list(), steps = Value::make_list();
    std::vector<int64_t> sliced_shape;
    int gather_axis = -1;
    Value gather_indices;
    std::vector<std::pair<int64_t, const IndexItem*>> at_run_time;  // (axis, item)
    std::vector<int64_t> dropped;  // the axes constant integers select (size 1 after the slice)
    int64_t dim = 0;
    bool needs_slice = false;
    auto none = Value::make_int(INT64_MIN);
    auto keep_dim = [&](int64_t d) {
      starts.items.push_back(none);
      stops.items.push_back(none);
      steps.items.push_back(Value::make_int(1));
      sliced_shape.push_back(d);
    };
    for (const IndexItem& it : ix.items) {
      if (it.kind == IndexItem::Ellipsis) {
        for (int64_t k = 0; k < rank - consumed; ++k, ++dim) keep_dim(bt.shape[dim]);
        continue;
      }
      int64_t d = bt.shape[dim];
      if (it.kind == IndexItem::Single) {
        const std::optional<Value>& c = it.value->constant;
        if (!c || (d < 0 && c->kind != Value::List)) {
          at_run_time.emplace_back(dim, &it);
          keep_dim(d);
        } else if (c->kind == Value::List) {
          gather_axis = static_cast<int>(dim);
          gather_indices = *c;
          for (Value& g : gather_indices.items)
            if (g.i < 0 && d >= 0) g.i += d;
          keep_dim(d);
        } else {
          int64_t i = c->i < 0 ? c->i + d : c->i;
          starts.items.push_back(Value::make_int(i));
          stops.items.push_back(Value::make_int(i + 1));
          steps.items.push_back(Value::make_int(1));
          sliced_shape.push_back(1);
          dropped.push_back(dim);
          needs_slice = true;
        }
      } else if (!slice_bound_known(it.start) || !slice_bound_known(it.stop) || !slice_bound_known(it.step)) {
        at_run_time.emplace_back(dim, &it);
        keep_dim(d);
      } else {
        Value s = slice_bound(it.start, none), t = slice_bound(it.stop, none),
              st = slice_bound(it.step, Value::make_int(1));
        starts.items.push_back(s);
        stops.items.push_back(t);
        steps.items.push_back(st);
        needs_slice = needs_slice || s.i != INT64_MIN || t.i != INT64_MIN || st.i != 1;
        // The sliced size is what sema computed for this dimension (before gathers and integer drops).
        sliced_shape.push_back(kUnknownDim);
      }
      ++dim;
    }
    for (; dim < rank; ++dim) keep_dim(bt.shape[dim]);
    // Recompute slice sizes from the bounds (sema already validated them).
    for (int64_t k = 0; k < rank; ++k) {
      if (sliced_shape[k] != kUnknownDim) continue;
      int64_t d = bt.shape[k];
      if (d < 0) continue;
      sliced_shape[k] = resolve_slice(starts.items[k].i, stops.items[k].i, steps.items[k].i, d).len;
    }
    int cur = base;
    if (needs_slice) {
      cur = emit(OpKind::Slice, {cur}, {{"starts", starts}, {"stops", stops}, {"steps", steps}},
                 Type::tensor(bt.dtype, sliced_shape), ix.range);
    }
    if (gather_axis >= 0) {
      std::vector<int64_t> shape = fn_.body[cur].type.shape;
      shape[gather_axis] = static_cast<int64_t>(gather_indices.items.size());
      cur = emit(OpKind::Gather, {cur}, {{"axis", Value::make_int(gather_axis)}, {"indices", gather_indices}},
                 Type::tensor(bt.dtype, shape), ix.range);
    }
    for (auto r = at_run_time.rbegin(); r != at_run_time.rend(); ++r) {
      const auto [axis, item] = *r;
      std::vector<int64_t> shape = fn_.body[cur].type.shape;
      std::map<std::string, Value> attrs{{"axis", Value::make_int(axis)}};
      std::vector<int> operands{cur};
      OpKind op = OpKind::DynamicIndex;
      if (item->kind == IndexItem::Single) {
        shape.erase(shape.begin() + axis);
        const Expr& i = *item->value;
        operands.push_back(i.constant ? emit_const(*i.constant, DType::I64, {}, i.range) : tensor(i));
      } else {
        op = OpKind::DynamicSlice;
        shape[static_cast<size_t>(axis)] = kUnknownDim;
        const std::pair<const char*, const ExprPtr*> bounds[] = {
            {"start", &item->start}, {"stop", &item->stop}, {"step", &item->step}};
        for (const auto& [name, x] : bounds) {
          if (*x && !(*x)->constant) operands.push_back(tensor(**x));
          else attrs[name] = slice_bound(*x, std::string(name) == "step" ? Value::make_int(1) : none);
        }
      }
      cur = emit(op, operands, std::move(attrs), Type::tensor(bt.dtype, shape), ix.range);
    }
    if (fn_.body[cur].type.shape == ix.type.shape) return cur;
    if (ix.type.fully_known())
      return emit(OpKind::Reshape, {cur}, {{"shape", shape_value(ix.type.shape)}}, ix.type, ix.range);
    // The dropped axes, renumbered past the ones dynamic_index removed, from the last down.
    for (auto d = dropped.rbegin(); d != dropped.rend(); ++d) {
      int64_t axis = *d;
      for (const auto& [a, item] : at_run_time)
        if (a < *d && item->kind == IndexItem::Single) --axis;
      std::vector<int64_t> shape = fn_.body[cur].type.shape;
      shape.erase(shape.begin() + axis);
      cur = emit(OpKind::Squeeze, {cur}, {{"axis", Value::make_int(axis)}}, Type::tensor(bt.dtype, shape), ix.range);
    }
    return cur;
  }

  static bool slice_bound_known(const ExprPtr& x) { return !x || x->constant; }
  // A constant slice bound as the slice attributes hold it, `omitted` when there is none. i64's minimum
  // would read as omitted (kSliceNone): it moves up by one, which clamps alike (no dimension is that long).
  static Value slice_bound(const ExprPtr& x, const Value& omitted) {
    if (!x) return omitted;
    return Value::make_int(std::max(x->constant->i, kSliceNone + 1));
  }

  // The default of a float random op's bound parameter; nullopt for every other parameter.
  static std::optional<double> random_bound_default(OpKind op, const std::string& param) {
    if (op == OpKind::RandomUniform) {
      if (param == "lo") return 0.0;
      if (param == "hi") return 1.0;
    } else if (op == OpKind::RandomNormal) {
      if (param == "mean") return 0.0;
      if (param == "std") return 1.0;
    }
    return std::nullopt;
  }

  static Value shape_value(const std::vector<int64_t>& shape) {
    Value v = Value::make_list();
    for (int64_t d : shape) v.items.push_back(Value::make_int(d));
    return v;
  }

  LValue lower_call(const CallExpr& call, const Expr* piped) {
    return lower_named_call(*call.callee->as<NameExpr>(), &call, piped, call);
  }

  LValue lower_named_call(const NameExpr& callee, const CallExpr* call, const Expr* piped, const Expr& whole) {
    std::vector<const Expr*> positional;
    std::map<std::string, const Expr*> named;
    if (piped) positional.push_back(piped);
    if (call)
      for (const Arg& a : call->args) {
        if (a.name.empty()) positional.push_back(a.value.get());
        else named[a.name] = a.value.get();
      }
    const Binding& target = callee.target;
    if (target.kind == Binding::Global && target.decl && target.decl->kind == DeclKind::Fn)
      return lower_fn(*target.decl, positional, named);
    if (auto dt = parse_dtype(callee.name)) {
      int x = tensor(*positional.at(0));
      return value(cast_to(x, *dt, whole.range));
    }
    const Builtin* b = find_builtin(callee.name, {BuiltinKind::Op});
    if (!b) throw std::logic_error("lowering: unknown op " + callee.name);
    const std::optional<OpKind> kind = op_of_builtin(*b);
    if (!kind) throw std::logic_error("lowering: builtin " + b->name + " has no op in runtime/plan/ops.def");
    const OpInfo& info = op_info(*kind);
    // Bind arguments to parameters by position, then by name.
    std::vector<const Expr*> bound(b->params.size(), nullptr);
    for (size_t i = 0; i < positional.size() && i < bound.size(); ++i) bound[i] = positional[i];
    for (auto& [n, x] : named)
      for (size_t i = 0; i < b->params.size(); ++i)
        if (b->params[i].name == n) bound[i] = x;
    std::vector<int> operands;
    std::map<std::string, Value> attrs;
    // Each random op draws from its own Philox stream, keyed by its call site; the fields of a paired
    // image op (random_crop on a record) share one, so they get the same window.
    if (info.has(OpFlag::Random)) attrs["op_id"] = Value::make_int(next_op_id_++);
    const Type& result = whole.type;
    // Element-wise math sees its operands in the result dtype: those of several operands as they are
    // bound, those of one (float math on integers computes in the result's float type) below.
    const bool casts_operands = info.has(OpFlag::LowerCastsOperands);
    const bool elementwise = casts_operands && info.max_operands != 1 && b->params.size() <= 3 && result.is_tensor();
    std::vector<std::string> record_fields;  // image ops on records apply per field
    const Expr* record_arg = nullptr;
    for (size_t i = 0; i < bound.size(); ++i) {
      const Expr* x = bound[i];
      const std::string& pname = b->params[i].name;
      if (!x) {
        // The random kernels read their bounds by position (lo, hi / mean, std): a bound left out gets
        // its default here, so `random_uniform(s, hi = 5.0)` is not read as `lo = 5.0`.
        if (auto d = random_bound_default(*kind, pname))
          operands.push_back(emit_const(Value::make_float(*d), result.dtype, {}, whole.range));
        continue;
      }
      if (kStaticParams.count(pname) || (x->constant && !x->type.is_tensor())) {
        // Sema requires these to be constants; a missing value here is a compiler bug, not user error.
        if (!x->constant) throw std::logic_error("lowering: `" + pname + "` of " + b->name + " is not a constant");
        attrs[pname] = *x->constant;
        continue;
      }
      if (x->type.kind == TypeKind::Record) {
        record_arg = x;
        continue;
      }
      if (b->params[i].tensor_list && x->kind == ExprKind::List) {
        for (auto& item : x->as<ListExpr>()->items) operands.push_back(operand(*item, result.dtype));
        continue;
      }
      bool is_cond = *kind == OpKind::Where && pname == "cond";
      operands.push_back(elementwise && !is_cond ? operand(*x, result.dtype) : tensor(*x));
    }
    if (casts_operands && info.max_operands == 1 && !operands.empty())
      operands[0] = cast_to(operands[0], result.dtype, whole.range);
    if (record_arg) {
      LValue rec = lower(*record_arg);
      LValue out;
      for (const std::string& f : rec.order) {
        std::vector<int> ops = operands;
        ops.insert(ops.begin(), rec.fields.at(f));
        out.fields[f] = emit(*kind, ops, attrs, *result.field(f), whole.range);
        out.order.push_back(f);
      }
      return out;
    }
    return value(emit(*kind, operands, attrs, result, whole.range));
  }

  // fn calls are inlined: the body is lowered with the parameters bound to the arguments.
  LValue lower_fn(const Decl& fn, const std::vector<const Expr*>& positional,
                  const std::map<std::string, const Expr*>& named) {
    std::map<std::string, LValue> frame;
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const Expr* x = i < positional.size() ? positional[i] : named.at(fn.params[i].name);
      DType want = parse_dtype(fn.params[i].type.name).value_or(x->type.dtype);
      frame[fn.params[i].name] = value(operand(*x, want));
    }
    // The body sees only its parameters and globals, not the caller's locals.
    std::vector<std::map<std::string, LValue>> saved;
    std::swap(saved, scopes_);
    scopes_.push_back(frame);
    LValue r = lower(*fn.value);
    std::swap(saved, scopes_);
    if (!r.is_record() && fn.result_type) {
      DType want = parse_dtype(fn.result_type->name).value_or(fn_.body[r.id].type.dtype);
      r.id = cast_to(r.id, want, fn.value->range);
    }
    return r;
  }

  const Program& program_;
  ExprFunction& fn_;
  std::vector<std::map<std::string, LValue>> scopes_;
  int64_t next_op_id_ = 0;
  const std::map<const Expr*, int>* prebound_ = nullptr;  // model expressions: values of the model graph
};

class PlanLowering {
 public:
  PlanLowering(const Program& program, Plan& plan) : program_(program), plan_(plan) {}

  int lower(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Name: {
        auto& n = *e.as<NameExpr>();
        const Decl* d = n.target.decl;
        if (!d) throw std::logic_error("lowering: dataset name without a declaration: " + n.name);
        return lower(*d->value);
      }
      case ExprKind::Pipe: {
        auto& p = *e.as<PipeExpr>();
        int in = lower(*p.lhs);
        if (p.rhs->kind == ExprKind::Call)
          return stage(*p.rhs->as<CallExpr>()->callee->as<NameExpr>(), p.rhs->as<CallExpr>(), {in}, e, p.rhs->range);
        return stage(*p.rhs->as<NameExpr>(), nullptr, {in}, e, p.rhs->range);
      }
      case ExprKind::Call: {
        auto& c = *e.as<CallExpr>();
        return stage(*c.callee->as<NameExpr>(), &c, {}, e, e.range);
      }
      default: throw std::logic_error("lowering: not a dataset expression");
    }
  }

 private:
  // `whole` is the expression whose type is the stage's output; `loc` is the stage call itself.
  int stage(const NameExpr& callee, const CallExpr* call, std::vector<int> inputs, const Expr& whole, SourceRange loc) {
    bool is_stage = !inputs.empty();
    const Builtin* b = is_stage ? find_builtin(callee.name, {BuiltinKind::Stage, BuiltinKind::Sink})
                                : find_builtin(callee.name, {BuiltinKind::Source});
    if (!b) throw std::logic_error("lowering: unknown stage " + callee.name);
    const std::optional<StageKind> kind = stage_of_builtin(*b);
    if (!kind) throw std::logic_error("lowering: builtin " + b->name + " has no stage in runtime/plan/stages.def");
    Stage s;
    s.kind = *kind;
    s.loc = spec_loc(program_, loc);
    s.element = *whole.type.element;
    s.inputs = inputs;
    size_t next = is_stage ? 1 : 0;
    std::vector<std::pair<std::string, const Expr*>> bound;
    if (call) {
      for (const Arg& a : call->args) {
        if (!a.name.empty()) {
          bound.push_back({a.name, a.value.get()});
        } else if (next < b->params.size() && b->params[next].variadic) {
          bound.push_back({b->params[next].name, a.value.get()});
        } else if (next < b->params.size()) {
          bound.push_back({b->params[next++].name, a.value.get()});
        }
      }
    }
    // flat_map(fn), interleave(fn, ...): a pipeline per element; explain and the runtime call both flat_map.
    for (auto& [name, x] : bound)
      if ((s.kind == StageKind::FlatMap || s.kind == StageKind::Interleave) && name == "fn") {
        s.kind = StageKind::FlatMap;
        inner_pipeline(*x->as<LambdaExpr>(), s);
      }
    for (auto& [name, x] : bound) {
      if (s.kind == StageKind::FlatMap && name == "fn") continue;
      if (s.kind == StageKind::GroupByWindow && name == "reduce") {
        reduce_args(*x->as<LambdaExpr>(), s);
        continue;
      }
      if (x->kind == ExprKind::Lambda) {
        auto fn = std::make_shared<ExprFunction>();
        fn->name = fmt::format("{}@{}", stage_name(s.kind), plan_.stages.size());
        FunctionLowering fl(program_, *fn);
        auto& lambda = *x->as<LambdaExpr>();
        auto r = fl_result(fl, lambda);
        if (s.kind == StageKind::Filter) fn->results = {{"keep", r.second}};
        else if (s.kind == StageKind::BucketByLength) fn->results = {{"length", r.second}};
        else if (s.kind == StageKind::GroupByWindow) fn->results = {{"key", r.second}};
        else if (s.kind == StageKind::RejectionResample) fn->results = {{"class", r.second}};
        else fn->results = r.first;
        s.fn = fn;
        continue;
      }
      if (stage_has(s.kind, StageFlag::MultiInput) && (x->type.kind == TypeKind::Dataset || dataset_list(*b, name)))
        continue;  // zip, concatenate, choose_from: their datasets are their inputs (below, in parameter order)
      if (x->constant) s.args.push_back({name, *x->constant});
      else if (const std::string field = element_field(*x); !field.empty())
        bindings_->push_back(Value::make_list({Value::make_int(static_cast<int64_t>(plan_.stages.size())),
                                               Value::make_symbol(name), Value::make_symbol(field)}));
      else if (x->kind == ExprKind::Record && s.kind == StageKind::Scan)
        s.args.push_back({name, initial_state(*x->as<RecordExpr>())});
      else if (x->kind == ExprKind::Call && b->kind == BuiltinKind::Sink)
        s.args.push_back({name, format_value(*x->as<CallExpr>())});
    }
    // choose_from's inputs are its datasets, then its index pipeline, however the call orders them.
    if (stage_has(s.kind, StageFlag::MultiInput))
      for (const ParamSpec& p : b->params)
        for (auto& [name, x] : bound) {
          if (name != p.name) continue;
          if (p.dataset_list)
            for (const auto& item : x->as<ListExpr>()->items) s.inputs.push_back(lower(*item));
          else if (x->type.kind == TypeKind::Dataset) s.inputs.push_back(lower(*x));
        }
    // Sources: the declaration's schema says what each record holds.
    const Decl* source_decl = b->kind == BuiltinKind::Source ? declaration_of(whole) : nullptr;
    if (source_decl) {
      for (const SchemaField& sf : source_decl->schema) {
        SchemaEntry e;
        e.name = sf.name;
        e.type = *s.element.fields[schema_index(s.element, sf.name)].type;
        e.fixed_bytes = sf.type.name == "bytes" && !sf.type.dims.empty();
        if (sf.default_value && sf.default_value->constant) e.default_value = sf.default_value->constant;
        s.schema.push_back(std::move(e));
      }
    }
    plan_.stages.push_back(std::move(s));
    return static_cast<int>(plan_.stages.size()) - 1;
  }

  // flat_map's `r => text_lines(r.path) | take(3)` becomes a plan of its own (Stage::inner); each
  // argument of its source that is a field of the element becomes a binding [stage, argument, field]
  // in the stage's `bind` argument, which the runtime fills from each element.
  void inner_pipeline(const LambdaExpr& lambda, Stage& s) {
    auto inner = std::make_shared<Plan>();
    inner->name = "element";
    Value bind = Value::make_list();
    PlanLowering lowering(program_, *inner);
    lowering.element_param_ = lambda.params.at(0);
    lowering.bindings_ = &bind.items;
    lowering.lower(*lambda.body);
    fuse_file_decodes(*inner);
    if (!bind.items.empty()) s.args.push_back({"bind", bind});
    s.inner = inner;
  }

  // The field `r.path` reads when `x` is that read of the element of the flat_map being lowered; "" otherwise.
  std::string element_field(const Expr& x) const {
    if (element_param_.empty() || x.kind != ExprKind::Member) return "";
    const auto& m = *x.as<MemberExpr>();
    if (m.base->kind != ExprKind::Name) return "";
    const auto& n = *m.base->as<NameExpr>();
    if (n.name != element_param_ || n.target.kind != Binding::LambdaParam) return "";
    return m.member;
  }

  // group_by_window's `reduce = w => w | padded_batch(4, padding_value = -1)` becomes the arguments
  // reduce = padded_batch, reduce_size = 4, reduce_padding_value = -1 (the checker accepts only a batch
  // or padded_batch of the window, with constant arguments).
  static void reduce_args(const LambdaExpr& lambda, Stage& s) {
    const Expr& rhs = *lambda.body->as<PipeExpr>()->rhs;
    const CallExpr* call = rhs.kind == ExprKind::Call ? rhs.as<CallExpr>() : nullptr;
    const std::string& name = (call ? *call->callee : rhs).as<NameExpr>()->name;
    s.args.push_back({"reduce", Value::make_symbol(name)});
    const Builtin* b = find_builtin(name, {BuiltinKind::Stage});
    if (!b || !call) throw std::logic_error("lowering: group_by_window's reduce is not a batch of the window");
    size_t next = 1;  // params[0] is the piped input
    for (const Arg& a : call->args) {
      const std::string& param = a.name.empty() ? b->params.at(next++).name : a.name;
      if (!a.value->constant) throw std::logic_error("lowering: group_by_window's reduce has a non-constant " + param);
      s.args.push_back({"reduce_" + param, *a.value->constant});
    }
  }

  // scan's `initial = { total: 0, n: 0.0 }` becomes the list [[total, 0], [n, 0.0]] (the checker made
  // every field a constant).
  static Value initial_state(const RecordExpr& r) {
    Value v = Value::make_list();
    for (const RecordFieldSyntax& f : r.fields) {
      Value pair = Value::make_list();
      pair.items.push_back(Value::make_symbol(f.name));
      pair.items.push_back(*f.value->constant);
      v.items.push_back(std::move(pair));
    }
    return v;
  }

  // Whether `b`'s parameter `name` is a list of datasets (choose_from's, sample_from's), not a list constant.
  static bool dataset_list(const Builtin& b, const std::string& name) {
    for (const ParamSpec& p : b.params)
      if (p.name == name) return p.dataset_list;
    return false;
  }

  // The source declaration whose value is this call, if any.
  const Decl* declaration_of(const Expr& call) const {
    for (const auto& m : program_.modules)
      for (const auto& d : m->decls)
        if (d->kind == DeclKind::Source && d->value.get() == &call) return d.get();
    return nullptr;
  }

  static size_t schema_index(const ElementInfo& e, const std::string& name) {
    for (size_t i = 0; i < e.fields.size(); ++i)
      if (e.fields[i].name == name) return i;
    throw std::logic_error("lowering: schema field missing from element: " + name);
  }

  // write(tfrecord("out/*.tfrecord", shards = 8)): the format becomes a list value [kind, path, shards, compression].
  static Value format_value(const CallExpr& c) {
    Value v = Value::make_list();
    v.items.push_back(Value::make_symbol(c.callee->as<NameExpr>()->name));
    for (const Arg& a : c.args) {
      Value item = Value::make_list();
      item.items.push_back(Value::make_symbol(a.name.empty() ? "path" : a.name));
      if (a.value->constant) item.items.push_back(*a.value->constant);
      v.items.push_back(item);
    }
    return v;
  }

  std::pair<std::vector<std::pair<std::string, int>>, int> fl_result(FunctionLowering& fl, const LambdaExpr& lambda) {
    LValue r = fl.lower_lambda(lambda);
    std::vector<std::pair<std::string, int>> fields;
    if (r.is_record())
      for (const std::string& f : r.order) fields.push_back({f, r.fields.at(f)});
    return {fields, r.id};
  }

 private:
  const Program& program_;
  Plan& plan_;
  std::string element_param_;               // lowering a flat_map's pipeline: its element's name
  std::vector<Value>* bindings_ = nullptr;  // and the stage's `bind` list
};

}  // namespace

std::optional<OpKind> op_of_builtin(const Builtin& b) {
  if (b.kind != BuiltinKind::Op) return std::nullopt;
  return op_from_name(b.name);
}

std::optional<StageKind> stage_of_builtin(const Builtin& b) {
  if (b.kind != BuiltinKind::Source && b.kind != BuiltinKind::Stage && b.kind != BuiltinKind::Sink) return std::nullopt;
  return stage_from_name(b.name);
}

int lower_model_expression(const Program& program, ExprFunction& fn, const Expr& e,
                           const std::map<const Expr*, int>& leaves) {
  FunctionLowering fl(program, fn);
  return fl.lower_with_leaves(e, leaves);
}

Plan lower_pipeline(const Program& program, const Decl& pipeline) {
  return lower_dataset(program, *pipeline.value, pipeline.name);
}

Plan lower_dataset(const Program& program, const Expr& dataset, const std::string& name) {
  Plan plan;
  plan.name = name;
  PlanLowering lowering(program, plan);
  lowering.lower(dataset);
  fuse_file_decodes(plan);
  return plan;
}

}  // namespace pipec

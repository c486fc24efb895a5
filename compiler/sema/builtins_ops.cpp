// Tensor ops usable inside map/filter bodies and fns: math, comparisons, bit ops, reshapes, joins,
// reductions, random numbers.
#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"
#include "compiler/sema/promotion.h"

namespace pipec {

ParamSpec req(std::string name) { return ParamSpec{std::move(name), true, "", {}, false}; }
ParamSpec opt(std::string name, std::string default_text, std::vector<std::string> options) {
  return ParamSpec{std::move(name), false, std::move(default_text), std::move(options), false};
}
ParamSpec rest(std::string name) { return ParamSpec{std::move(name), false, "", {}, true}; }
ParamSpec dataset_list(std::string name) {
  ParamSpec p = req(std::move(name));
  p.dataset_list = true;
  return p;
}
ParamSpec tensor_list(std::string name) {
  ParamSpec p = req(std::move(name));
  p.tensor_list = true;
  return p;
}

Type dataset_of(ElementInfo info) { return Type::dataset(std::move(info)); }

std::optional<Type> numeric_arg(CallContext& ctx, std::string_view name) {
  auto t = ctx.tensor(name);
  if (!t) return std::nullopt;
  if (t->dtype == DType::Bytes) {
    ctx.error(DiagKind::type_mismatch, ctx.arg(name).range,
              fmt::format("{} needs numbers, not {}", ctx.builtin.name, type_to_string(*t)));
    return std::nullopt;
  }
  return t;
}

std::optional<Type> elementwise2(CallContext& ctx, std::string_view a, std::string_view b) {
  auto x = numeric_arg(ctx, a);
  auto y = numeric_arg(ctx, b);
  if (!x || !y) return std::nullopt;
  auto p = promote(x->dtype, x->weak, y->dtype, y->weak);
  if (!p) {
    ctx.error(DiagKind::type_mismatch, ctx.range,
              fmt::format("{} cannot combine {} and {}", ctx.builtin.name, type_to_string(*x), type_to_string(*y)));
    return std::nullopt;
  }
  auto shape = broadcast_shapes(x->shape, y->shape);
  if (!shape) {
    ctx.error(DiagKind::shape_mismatch, ctx.range,
              fmt::format("{}: shapes {} and {} do not broadcast", ctx.builtin.name, shape_to_spec(x->shape),
                          shape_to_spec(y->shape)));
    return std::nullopt;
  }
  Type r = Type::tensor(p->dtype, *shape);
  r.weak = p->weak;
  return r;
}

std::optional<int64_t> normalize_axis(CallContext& ctx, std::string_view name, int64_t axis, int64_t rank,
                                      bool allow_end) {
  int64_t limit = allow_end ? rank + 1 : rank;
  int64_t a = axis < 0 ? axis + limit : axis;
  if (a < 0 || a >= limit) {
    ctx.error(DiagKind::invalid_index, ctx.arg(name).range.valid() ? ctx.arg(name).range : ctx.range,
              fmt::format("axis {} is out of range for rank {}", axis, rank));
    return std::nullopt;
  }
  return a;
}

namespace {

// Math that needs a float: integers become f32 (f64 stays f64).
Type float_of(const Type& t) {
  Type r = t;
  if (!is_float(t.dtype)) r.dtype = DType::F32;
  return r;
}

Builtin op(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule) {
  return Builtin{std::move(name), BuiltinKind::Op, std::move(params), std::move(doc), std::move(rule)};
}

void add_unary_math(std::vector<Builtin>& out) {
  struct U {
    const char* name;
    const char* doc;
    bool to_float;
  };
  const U list[] = {
      {"abs", "Absolute value, element-wise.", false},
      {"sign", "-1, 0 or 1 by the sign of each element.", false},
      {"neg", "Negation, element-wise.", false},
      {"tanh", "Hyperbolic tangent, element-wise.", true},
      {"exp", "e raised to each element.", true},
      {"log", "Natural logarithm, element-wise.", true},
      {"log1p", "log(1 + x), accurate near zero.", true},
      {"sqrt", "Square root, element-wise.", true},
      {"rsqrt", "1 / sqrt(x), element-wise.", true},
      {"sin", "Sine, element-wise.", true},
      {"cos", "Cosine, element-wise.", true},
      {"floor", "Largest integer not above each element.", true},
      {"ceil", "Smallest integer not below each element.", true},
      {"round", "Rounds half to even, element-wise.", true},
      {"sigmoid", "1 / (1 + exp(-x)), element-wise.", true},
      {"relu", "max(x, 0), element-wise.", false},
      {"square", "x * x, element-wise.", false},
  };
  for (const U& u : list) {
    bool to_float = u.to_float;
    out.push_back(op(u.name, {req("x")}, u.doc, [to_float](CallContext& ctx) -> Type {
      auto t = numeric_arg(ctx, "x");
      if (!t) return Type::error();
      Type r = to_float ? float_of(*t) : *t;
      if (r.dtype == DType::Bool) r.dtype = DType::I64;
      return r;
    }));
  }
}

void add_binary_math(std::vector<Builtin>& out) {
  for (const char* name : {"max", "min", "pow", "atan2"}) {
    bool to_float = std::string(name) == "atan2";
    std::string doc = std::string(name) == "max"   ? "The larger of a and b, element-wise with broadcasting."
                      : std::string(name) == "min" ? "The smaller of a and b, element-wise with broadcasting."
                      : std::string(name) == "pow" ? "a raised to b, element-wise (same as a ** b)."
                                                   : "atan(a / b) in the right quadrant, element-wise.";
    out.push_back(op(name, {req("a"), req("b")}, doc, [to_float](CallContext& ctx) -> Type {
      auto t = elementwise2(ctx, "a", "b");
      if (!t) return Type::error();
      return to_float ? float_of(*t) : *t;
    }));
  }
  for (const char* name : {"bit_or", "bit_and", "bit_xor"}) {
    out.push_back(
        op(name, {req("a"), req("b")},
           std::string("Bitwise ") + (name + 4) + " of two integer tensors (`|` is the pipe, so or is a function).",
           [](CallContext& ctx) -> Type {
             auto t = elementwise2(ctx, "a", "b");
             if (!t) return Type::error();
             if (!is_integer(t->dtype) && t->dtype != DType::Bool) {
               ctx.error(DiagKind::integer_expected, ctx.range,
                         fmt::format("{} needs integers, not {}", ctx.builtin.name, type_to_string(*t)));
               return Type::error();
             }
             return *t;
           }));
  }
  out.push_back(op("where", {req("cond"), req("a"), req("b")},
                   "Picks a where cond is true and b elsewhere, with broadcasting.", [](CallContext& ctx) -> Type {
                     auto c = ctx.tensor("cond");
                     auto t = elementwise2(ctx, "a", "b");
                     if (!c || !t) return Type::error();
                     if (c->dtype != DType::Bool) {
                       ctx.error(DiagKind::bool_expected, ctx.arg("cond").range,
                                 fmt::format("where's condition must be bool, not {}", type_to_string(*c)));
                       return Type::error();
                     }
                     auto shape = broadcast_shapes(c->shape, t->shape);
                     if (!shape) {
                       ctx.error(DiagKind::shape_mismatch, ctx.range,
                                 "where: the condition does not broadcast with the values");
                       return Type::error();
                     }
                     t->shape = *shape;
                     return *t;
                   }));
  out.push_back(
      op("clip", {req("x"), req("lo"), req("hi")}, "Limits every element to [lo, hi].", [](CallContext& ctx) -> Type {
        auto t = numeric_arg(ctx, "x");
        if (!t || !numeric_arg(ctx, "lo") || !numeric_arg(ctx, "hi")) return Type::error();
        return *t;
      }));
}

void add_shape_ops(std::vector<Builtin>& out) {
  out.push_back(op("unpack_bits", {req("x")},
                   "Unpacks each byte of a u8 tensor into 8 bits, most significant first: u8[..., n] -> u8[..., 8n].",
                   [](CallContext& ctx) -> Type {
                     auto t = ctx.tensor("x");
                     if (!t) return Type::error();
                     if (t->dtype != DType::U8 || t->rank() == 0) {
                       ctx.error(DiagKind::type_mismatch, ctx.arg("x").range,
                                 fmt::format("unpack_bits needs u8[..., n], not {}", type_to_string(*t)));
                       return Type::error();
                     }
                     Type r = *t;
                     if (r.shape.back() >= 0) r.shape.back() *= 8;
                     return r;
                   }));
  out.push_back(
      op("pack_bits", {req("x")}, "Packs 0/1 values into bytes, most significant first: [..., 8n] -> u8[..., n].",
         [](CallContext& ctx) -> Type {
           auto t = numeric_arg(ctx, "x");
           if (!t) return Type::error();
           if (t->rank() == 0 || (t->shape.back() >= 0 && t->shape.back() % 8 != 0)) {
             ctx.error(DiagKind::shape_mismatch, ctx.arg("x").range,
                       fmt::format("pack_bits needs a last dimension divisible by 8, not {}", type_to_string(*t)));
             return Type::error();
           }
           Type r = Type::tensor(DType::U8, t->shape);
           if (r.shape.back() >= 0) r.shape.back() /= 8;
           return r;
         }));
  out.push_back(op("reshape", {req("x"), req("shape")},
                   "Gives x a new shape with the same number of elements; one dimension may be -1 (inferred).",
                   [](CallContext& ctx) -> Type {
                     auto t = ctx.tensor("x");
                     auto shape = ctx.const_int_list("shape");
                     if (!t || !shape) return Type::error();
                     int inferred = -1;
                     int64_t known = 1;
                     for (size_t i = 0; i < shape->size(); ++i) {
                       int64_t d = (*shape)[i];
                       if (d == -1) {
                         if (inferred >= 0) {
                           ctx.error(DiagKind::reshape_mismatch, ctx.arg("shape").range,
                                     "reshape: only one dimension may be -1");
                           return Type::error();
                         }
                         inferred = static_cast<int>(i);
                       } else if (d < 0) {
                         ctx.error(DiagKind::reshape_mismatch, ctx.arg("shape").range,
                                   fmt::format("reshape: dimension {} is negative", d));
                         return Type::error();
                       } else {
                         known *= d;
                       }
                     }
                     int64_t n = t->num_elements();
                     if (n >= 0) {
                       if (inferred >= 0) {
                         if (known == 0 || n % known != 0) {
                           // Written as given, with the -1 (shape_to_spec would print it as `?`).
                           std::string written = "[";
                           for (size_t i = 0; i < shape->size(); ++i)
                             written += (i ? ", " : "") + std::to_string((*shape)[i]);
                           written += "]";
                           ctx.error(DiagKind::reshape_mismatch, ctx.range,
                                     fmt::format("cannot reshape {} ({} elements) to {}: {} is not a multiple of {}",
                                                 type_to_string(*t), n, written, n, known));
                           return Type::error();
                         }
                         (*shape)[inferred] = n / known;
                       } else if (known != n) {
                         ctx.error(DiagKind::reshape_mismatch, ctx.range,
                                   fmt::format("cannot reshape {} ({} elements) to {} ({} elements)",
                                               type_to_string(*t), n, shape_to_spec(*shape), known));
                         return Type::error();
                       }
                     } else if (inferred >= 0) {
                       (*shape)[inferred] = kUnknownDim;
                     }
                     return Type::tensor(t->dtype, *shape);
                   }));
  auto join = [](bool stack) {
    return [stack](CallContext& ctx) -> Type {
      const BoundArg& v = ctx.arg("values");
      std::vector<Type> items;
      // `values` is a list literal of tensors whose items were checked one by one.
      if (!v.expr || v.expr->kind != ExprKind::List) {
        ctx.error(
            DiagKind::type_mismatch, v.range,
            fmt::format("{} takes a list literal of tensors, like {}([a, b])", ctx.builtin.name, ctx.builtin.name));
        return Type::error();
      }
      for (auto& item : v.expr->as<ListExpr>()->items) items.push_back(item->type);
      if (items.empty()) {
        ctx.error(DiagKind::type_mismatch, v.range, fmt::format("{} needs at least one tensor", ctx.builtin.name));
        return Type::error();
      }
      int64_t axis = 0;
      if (ctx.has("axis")) {
        auto a = ctx.const_int("axis");
        if (!a) return Type::error();
        axis = *a;
      } else if (!stack) {
        axis = -1;
      }
      Type first = items[0];
      if (!first.is_tensor()) return Type::error();
      auto ax = normalize_axis(ctx, "axis", axis, first.rank(), stack);
      if (!ax) return Type::error();
      if (!stack && first.rank() == 0) {
        ctx.error(DiagKind::shape_mismatch, v.range, "concat needs tensors of rank 1 or more");
        return Type::error();
      }
      Type acc = first;
      int64_t total = stack ? static_cast<int64_t>(items.size()) : 0;
      for (size_t i = 0; i < items.size(); ++i) {
        const Type& t = items[i];
        if (!t.is_tensor()) return Type::error();
        auto p = promote(acc.dtype, acc.weak, t.dtype, t.weak);
        if (!p) {
          ctx.error(
              DiagKind::type_mismatch, v.expr->as<ListExpr>()->items[i]->range,
              fmt::format("{}: {} does not mix with {}", ctx.builtin.name, type_to_string(t), type_to_string(acc)));
          return Type::error();
        }
        acc.dtype = p->dtype;
        bool same_rank = t.rank() == first.rank();
        bool ok = same_rank;
        for (int64_t d = 0; ok && d < first.rank(); ++d) {
          if (!stack && d == *ax) continue;
          if (t.shape[d] != first.shape[d] && t.shape[d] >= 0 && first.shape[d] >= 0) ok = false;
        }
        if (!ok) {
          ctx.error(DiagKind::shape_mismatch, v.expr->as<ListExpr>()->items[i]->range,
                    fmt::format("{}: item {} is {} but item 0 is {}", ctx.builtin.name, i, type_to_string(t),
                                type_to_string(first)));
          return Type::error();
        }
        if (!stack) total = (total < 0 || t.shape[*ax] < 0) ? kUnknownDim : total + t.shape[*ax];
      }
      std::vector<int64_t> shape = first.shape;
      if (stack) shape.insert(shape.begin() + *ax, total);
      else shape[*ax] = total;
      Type r = Type::tensor(acc.dtype, shape);
      return r;
    };
  };
  out.push_back(op("stack", {tensor_list("values"), opt("axis", "0")},
                   "Stacks equally shaped tensors along a new axis.", join(true)));
  out.push_back(op("concat", {tensor_list("values"), opt("axis", "-1")},
                   "Joins tensors along an existing axis (the last by default).", join(false)));
  out.push_back(op("transpose", {req("x"), req("perm")},
                   "Permutes the dimensions of x: result dim i is x's dim perm[i].", [](CallContext& ctx) -> Type {
                     auto t = ctx.tensor("x");
                     auto perm = ctx.const_int_list("perm");
                     if (!t || !perm) return Type::error();
                     if (static_cast<int64_t>(perm->size()) != t->rank()) {
                       ctx.error(
                           DiagKind::shape_mismatch, ctx.arg("perm").range,
                           fmt::format("transpose: perm has {} entries for a rank-{} tensor", perm->size(), t->rank()));
                       return Type::error();
                     }
                     std::vector<bool> seen(perm->size(), false);
                     std::vector<int64_t> shape;
                     for (int64_t p : *perm) {
                       if (p < 0 || p >= t->rank() || seen[p]) {
                         ctx.error(DiagKind::invalid_index, ctx.arg("perm").range,
                                   "transpose: perm must be a permutation of 0..rank-1");
                         return Type::error();
                       }
                       seen[p] = true;
                       shape.push_back(t->shape[p]);
                     }
                     return Type::tensor(t->dtype, shape);
                   }));
  out.push_back(op("expand_dims", {req("x"), req("axis")}, "Inserts a dimension of size 1 at axis.",
                   [](CallContext& ctx) -> Type {
                     auto t = ctx.tensor("x");
                     auto a = ctx.const_int("axis");
                     if (!t || !a) return Type::error();
                     auto ax = normalize_axis(ctx, "axis", *a, t->rank(), true);
                     if (!ax) return Type::error();
                     Type r = *t;
                     r.shape.insert(r.shape.begin() + *ax, 1);
                     return r;
                   }));
  out.push_back(op("squeeze", {req("x"), opt("axis", "all")}, "Removes dimensions of size 1 (all, or the one at axis).",
                   [](CallContext& ctx) -> Type {
                     auto t = ctx.tensor("x");
                     if (!t) return Type::error();
                     Type r = *t;
                     r.shape.clear();
                     if (ctx.has("axis")) {
                       auto a = ctx.const_int("axis");
                       if (!a) return Type::error();
                       auto ax = normalize_axis(ctx, "axis", *a, t->rank());
                       if (!ax) return Type::error();
                       if (t->shape[*ax] != 1) {
                         ctx.error(DiagKind::shape_mismatch, ctx.arg("axis").range,
                                   fmt::format("squeeze: dimension {} has size {}, not 1", *a, t->shape[*ax]));
                         return Type::error();
                       }
                       r.shape = t->shape;
                       r.shape.erase(r.shape.begin() + *ax);
                       return r;
                     }
                     for (int64_t d : t->shape)
                       if (d != 1) r.shape.push_back(d);
                     return r;
                   }));
  out.push_back(op(
      "one_hot", {req("indices"), req("depth"), opt("dtype", "f32", {"f32", "f64", "u8", "i32", "i64", "bf16", "f16"})},
      "One-hot encodes integer indices: [...] -> [..., depth]; out-of-range indices give all zeros.",
      [](CallContext& ctx) -> Type {
        auto t = ctx.tensor("indices");
        auto depth = ctx.const_int("depth", 1);
        if (!t || !depth) return Type::error();
        if (!is_integer(t->dtype)) {
          ctx.error(DiagKind::integer_expected, ctx.arg("indices").range,
                    fmt::format("one_hot needs integer indices, not {}", type_to_string(*t)));
          return Type::error();
        }
        DType dt = DType::F32;
        if (ctx.has("dtype")) dt = *parse_dtype(ctx.arg("dtype").option);
        std::vector<int64_t> shape = t->shape;
        shape.push_back(*depth);
        return Type::tensor(dt, shape);
      }));
}

void add_reductions(std::vector<Builtin>& out) {
  struct R {
    const char* name;
    const char* doc;
  };
  const R list[] = {
      {"sum", "Sum over an axis (all axes when none is given)."},
      {"mean", "Mean over an axis (all axes when none is given); integers average as f32."},
      {"prod", "Product over an axis (all axes when none is given)."},
      {"reduce_max", "Maximum over an axis (all axes when none is given)."},
      {"reduce_min", "Minimum over an axis (all axes when none is given)."},
      {"argmax", "Index of the maximum along an axis (the last by default), as i64."},
  };
  for (const R& r : list) {
    std::string name = r.name;
    out.push_back(
        op(name, {req("x"), opt("axis", name == "argmax" ? "-1" : "all")}, r.doc, [name](CallContext& ctx) -> Type {
          auto t = numeric_arg(ctx, "x");
          if (!t) return Type::error();
          Type res = *t;
          if (name == "mean") res = float_of(res);
          if (name == "sum" && res.dtype == DType::Bool) res.dtype = DType::I64;
          if (name == "argmax") res.dtype = DType::I64;
          res.weak = false;
          if (!ctx.has("axis") && name != "argmax") {
            res.shape.clear();
            return res;
          }
          int64_t axis = -1;
          if (ctx.has("axis")) {
            auto a = ctx.const_int("axis");
            if (!a) return Type::error();
            axis = *a;
          }
          if (t->rank() == 0) {
            ctx.error(DiagKind::shape_mismatch, ctx.range,
                      fmt::format("{} over an axis needs a tensor of rank 1 or more", name));
            return Type::error();
          }
          auto ax = normalize_axis(ctx, "axis", axis, t->rank());
          if (!ax) return Type::error();
          res.shape.erase(res.shape.begin() + *ax);
          return res;
        }));
  }
}

void add_random(std::vector<Builtin>& out) {
  // Random ops draw from Philox keyed by (seed, op, element index, epoch): reproducible and independent of
  // thread count; `seed` defaults to the run's seed.
  auto shaped = [](DType default_dtype) {
    return [default_dtype](CallContext& ctx) -> Type {
      auto shape = ctx.const_int_list("shape");
      if (!shape) return Type::error();
      for (int64_t d : *shape)
        if (d < 0) {
          ctx.error(DiagKind::invalid_argument_value, ctx.arg("shape").range, "random shapes must be non-negative");
          return Type::error();
        }
      if (ctx.has("seed")) ctx.const_int("seed", 0);
      DType dt = default_dtype;
      for (const char* bound : {"lo", "hi", "mean", "std"}) {
        if (!ctx.has(bound)) continue;
        auto t = numeric_arg(ctx, bound);
        if (!t) return Type::error();
        if (!t->weak && is_float(t->dtype)) dt = t->dtype;
        if (!t->weak && default_dtype == DType::I64 && is_integer(t->dtype)) dt = t->dtype;
      }
      return Type::tensor(dt, *shape);
    };
  };
  out.push_back(op("random_uniform", {req("shape"), opt("lo", "0.0"), opt("hi", "1.0"), opt("seed", "run seed")},
                   "Uniform floats in [lo, hi) from the element's Philox stream.", shaped(DType::F32)));
  out.push_back(op("random_normal", {req("shape"), opt("mean", "0.0"), opt("std", "1.0"), opt("seed", "run seed")},
                   "Normally distributed floats from the element's Philox stream.", shaped(DType::F32)));
  out.push_back(op("random_int", {req("shape"), req("lo"), req("hi"), opt("seed", "run seed")},
                   "Uniform integers in [lo, hi) from the element's Philox stream.", shaped(DType::I64)));
}

}  // namespace

void register_op_builtins(std::vector<Builtin>& out) {
  add_unary_math(out);
  add_binary_math(out);
  add_shape_ops(out);
  add_reductions(out);
  add_random(out);
  out.push_back(
      op("size", {req("x")}, "The number of elements (strings: bytes) of x, as i64.", [](CallContext& ctx) -> Type {
        auto t = ctx.tensor("x");
        if (!t) return Type::error();
        return Type::tensor(DType::I64);
      }));
}

}  // namespace pipec

// Calls and pipes: which callee a name means, argument binding, and the CallContext helpers that
// builtin type rules use.
#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "compiler/sema/checker.h"
#include "compiler/sema/const_eval.h"
#include "compiler/sema/promotion.h"

namespace pipec {

// expr LPAREN argList? RPAREN  # callExpr
Type Checker::check_call(CallExpr& e) { return apply(*e.callee, &e, nullptr, nullptr, e.range); }

// expr PIPE expr  # pipeExpr
Type Checker::check_pipe(PipeExpr& e) {
  Type in = check(*e.lhs);
  if (e.rhs->kind != ExprKind::Call && e.rhs->kind != ExprKind::Name) {
    auto& diag = diags().report(DiagKind::not_callable, e.rhs->range,
                                "the right side of `|` must be a stage, layer or function");
    if (in.is_tensor()) diag.help = "`|` is the pipe; bitwise or is `bit_or(a, b)`";
    return Type::error();
  }
  auto* call = e.rhs->kind == ExprKind::Call ? e.rhs->as<CallExpr>() : nullptr;
  // When the input already failed, the stage itself is still checked (its name, its arguments and the
  // bodies of its function literals, with the element's type unknown) so that its own mistakes are
  // reported in the same run and the names it uses count as used; its type rule stays quiet about the
  // unknown input.
  Type t = apply(call ? *call->callee : *e.rhs, call, e.lhs.get(), &in, e.rhs->range);
  check_unchecked_lambdas(call, in);
  if (in.is_error()) t = Type::error();
  e.rhs->type = t;
  return t;
}

void Checker::check_unchecked_lambdas(CallExpr* call, const Type& input) {
  if (!call) return;
  for (Arg& a : call->args) {
    if (a.value->kind != ExprKind::Lambda) continue;
    auto& lambda = *a.value->as<LambdaExpr>();
    if (!lambda.param_types.empty() || lambda.params.empty()) continue;
    // flat_map's and interleave's function gives a dataset: its body names sources and stages.
    const std::string callee = call->callee->kind == ExprKind::Name ? call->callee->as<NameExpr>()->name : "";
    if ((callee == "flat_map" || callee == "interleave") && lambda.params.size() == 1) {
      const bool known = input.kind == TypeKind::Dataset && input.element;
      check_dataset_lambda(lambda, known ? Type::record(input.element->fields) : Type::error());
      continue;
    }
    // Every stage's function literal takes one element (map, filter); with another count of parameters
    // or an unknown input there is nothing better than unknown types.
    if (input.kind == TypeKind::Dataset && input.element && lambda.params.size() == 1)
      check_lambda(lambda, {Type::record(input.element->fields)});
    else check_lambda(lambda, std::vector<Type>(lambda.params.size(), Type::error()));
  }
}

const Builtin* Checker::lookup_callable(const std::string& name, const Type* piped_type) {
  return find_builtin(name, callable_kinds(ctx_, piped_input(piped_type)));
}

Type Checker::apply(Expr& callee_expr, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range) {
  if (callee_expr.kind != ExprKind::Name) {
    Type t = check(callee_expr);
    if (!t.is_error())
      diags().report(DiagKind::not_callable, callee_expr.range, fmt::format("{} cannot be called", type_to_string(t)));
    return Type::error();
  }
  auto& name_expr = *callee_expr.as<NameExpr>();
  const std::string& name = name_expr.name;
  if (name == "<error>") return Type::error();
  if (at_probe(callee_expr)) record_name_site(callee_expr, true, piped ? piped_type : nullptr);
  if (Local* l = lookup_local(name)) {
    l->used = true;
    name_expr.target = l->binding;
    auto& diag = diags().report(DiagKind::not_callable, callee_expr.range,
                                fmt::format("`{}` is {}, not a function", name, type_to_string(l->type)));
    if (piped_type && piped_type->is_tensor() && l->type.is_tensor())
      diag.help = "`|` is the pipe; bitwise or is `bit_or(a, b)`";
    check_unbound_args(call);
    return Type::error();
  }
  if (const Decl* d = program_.global(name); d && d->kind != DeclKind::Import) {
    name_expr.target = Binding{Binding::Global, name, d->name_range, d, nullptr};
    used_[d] = true;
    if (d->kind == DeclKind::Fn) return call_fn(*d, call, piped, piped_type, range);
    if (d->kind == DeclKind::Model) {
      if (ctx_ == CheckContext::Train && !piped) return call_model(*d, call, range);
      if (ctx_ == CheckContext::Model) return apply_block(*d, call, piped, piped_type, range);
      diags().report(
          DiagKind::not_callable, range,
          fmt::format("model `{}` can only be called in a train block, or used as a layer in another model", name));
      return Type::error();
    }
    if (call || piped) {
      auto& diag = diags().report(DiagKind::not_callable, range,
                                  fmt::format("{} `{}` is not a function", decl_kind_name(d->kind), name));
      diag.notes.push_back({d->name_range, "declared here"});
      return Type::error();
    }
    return check(callee_expr);
  }
  if (auto dt = parse_dtype(name)) {
    name_expr.target = Binding{Binding::Builtin, name, {}, nullptr, nullptr};
    return call_cast(*dt, call, piped, piped_type, range);
  }
  if (const Builtin* b = lookup_callable(name, piped_type)) {
    name_expr.target = Binding{Binding::Builtin, name, {}, nullptr, nullptr, b};
    name_expr.type = Type::function(name);
    return call_builtin(*b, call, piped, piped_type, range);
  }
  // A builtin of another family (a stage called like a function, a layer in a map body): say where it belongs.
  if (const Builtin* other = find_builtin(
          name, {BuiltinKind::Stage, BuiltinKind::Sink, BuiltinKind::Layer, BuiltinKind::Source, BuiltinKind::Loss,
                 BuiltinKind::Optimizer, BuiltinKind::Strategy, BuiltinKind::Schedule})) {
    name_expr.target = Binding{Binding::Builtin, name, {}, nullptr, nullptr, other};
    if ((other->kind == BuiltinKind::Stage || other->kind == BuiltinKind::Sink) && piped_type) {
      diags().report(
          DiagKind::not_a_dataset, piped->range,
          fmt::format("`{}` is a stage and applies to a dataset, not to {}", name, type_to_string(*piped_type)));
    } else if (other->kind == BuiltinKind::Stage || other->kind == BuiltinKind::Sink) {
      diags().report(
          DiagKind::not_callable, callee_expr.range,
          fmt::format("`{}` is a stage; apply it to a dataset with `|`, as in `data | {}(...)`", name, name));
    } else {
      const char* where = other->kind == BuiltinKind::Layer    ? "only inside a model"
                          : other->kind == BuiltinKind::Source ? "only to start a source or pipeline"
                                                               : "only in a train block";
      diags().report(DiagKind::not_callable, callee_expr.range,
                     fmt::format("`{}` is a {} and can be used {}", name, builtin_kind_name(other->kind), where));
    }
    check_unbound_args(call);
    return Type::error();
  }
  // Unknown: the message depends on what was expected here.
  DiagKind kind = DiagKind::unknown_name;
  std::vector<std::string> candidates;
  std::string what = "function";
  bool stage_expected =
      piped_type && (piped_type->kind == TypeKind::Dataset ||
                     (piped_type->is_error() && (ctx_ == CheckContext::Pipeline || ctx_ == CheckContext::Source)));
  if (stage_expected) {
    kind = DiagKind::unknown_stage;
    what = "stage";
    candidates = builtin_names({BuiltinKind::Stage, BuiltinKind::Sink});
  } else if (ctx_ == CheckContext::Model) {
    kind = DiagKind::unknown_layer;
    what = "layer";
    candidates = builtin_names({BuiltinKind::Layer, BuiltinKind::Op});
  } else if ((ctx_ == CheckContext::Source || ctx_ == CheckContext::Pipeline) && !piped) {
    kind = DiagKind::unknown_source_kind;
    what = "source";
    candidates = builtin_names({BuiltinKind::Source});
  } else if (ctx_ == CheckContext::Train) {
    what = "loss, optimizer or strategy";
    candidates =
        builtin_names({BuiltinKind::Loss, BuiltinKind::Optimizer, BuiltinKind::Strategy, BuiltinKind::Schedule});
  } else {
    candidates = builtin_names({BuiltinKind::Op});
  }
  // A fn takes tensors: not a candidate for a stage, nor at the head of a pipeline.
  if (kind != DiagKind::unknown_stage && kind != DiagKind::unknown_source_kind)
    for (auto& [n, d] : program_.globals)
      if (d->kind == DeclKind::Fn) candidates.push_back(n);
  auto& diag = diags().report(kind, callee_expr.range, fmt::format("unknown {} `{}`", what, name));
  std::string best = closest_name(name, candidates);
  if (!best.empty()) {
    diag.help = fmt::format("did you mean `{}`?", best);
    diag.replacement = best;
  }
  // Check the arguments anyway so that their own mistakes are reported in the same run (bare option words
  // such as `auto` cannot be judged without knowing the callee).
  check_unbound_args(call);
  return Type::error();
}

void Checker::check_unbound_args(CallExpr* call) {
  if (!call) return;
  const auto& words = standalone_option_words();
  for (Arg& a : call->args) {
    if (a.value->kind == ExprKind::Lambda) continue;
    if (a.value->kind == ExprKind::Name &&
        std::find(words.begin(), words.end(), a.value->as<NameExpr>()->name) != words.end() &&
        !lookup_local(a.value->as<NameExpr>()->name) && !program_.global(a.value->as<NameExpr>()->name))
      continue;
    check(*a.value);
  }
}

bool Checker::bind_args(const Builtin& b, CallExpr* call, Expr* piped, const Type* piped_type, CallContext& ctx) {
  ctx.args.assign(b.params.size(), BoundArg{});
  bool ok = true;
  size_t next = 0;
  if (piped) {
    if (b.params.empty()) {
      diags().report(DiagKind::too_many_arguments, ctx.range, fmt::format("`{}` takes no input", b.name));
      return false;
    }
    BoundArg& a = ctx.args[0];
    a.present = true;
    a.expr = nullptr;
    a.type = *piped_type;
    a.value = piped->constant;
    a.range = piped->range;
    next = 1;
  }
  // Sinks take output formats (tfrecord(...) as a file format, not a source).
  CheckContext saved = ctx_;
  if (b.kind == BuiltinKind::Sink) ctx_ = CheckContext::Format;

  auto check_value = [&](const ParamSpec& p, Expr& x, BoundArg& a) {
    a.present = true;
    a.expr = &x;
    a.range = x.range;
    if (x.kind == ExprKind::Lambda) return;  // the rule checks it with the right parameter types
    if (p.dataset_list) {
      // `[a, b]`: each item is bound as a variadic argument would be; the rule checks they are datasets.
      if (x.kind != ExprKind::List) {
        diags().report(DiagKind::type_mismatch, x.range,
                       fmt::format("{}'s `{}` is a list of datasets: `[a, b, ...]`", b.name, p.name));
        check(x);
        a.type = Type::error();
        ok = false;
        return;
      }
      a.type = Type::opaque("datasets");
      for (auto& item : x.as<ListExpr>()->items) {
        BoundArg one;
        one.present = true;
        one.expr = item.get();
        one.range = item->range;
        one.type = check(*item);
        if (one.type.is_error()) a.type = Type::error();
        a.rest.push_back(std::move(one));
      }
      x.type = a.type;
      return;
    }
    if (p.tensor_list && x.kind == ExprKind::List) {
      // Items are checked one by one; the rule decides how their shapes must agree.
      a.type = Type::opaque("list");
      for (auto& item : x.as<ListExpr>()->items)
        if (check(*item).is_error()) a.type = Type::error();
      x.type = a.type;
      return;
    }
    if (!p.options.empty() && x.kind == ExprKind::Name) {
      auto& n = *x.as<NameExpr>();
      if (at_probe(n)) record_name_site(n, false, nullptr, &p.options);
      bool is_option = std::find(p.options.begin(), p.options.end(), n.name) != p.options.end();
      bool resolvable = lookup_local(n.name) || program_.global(n.name) ||
                        (train_element_ && Type::dataset(*train_element_).field(n.name));
      if (is_option || !resolvable) {
        if (!is_option) {
          std::string list;
          for (size_t i = 0; i < p.options.size(); ++i) list += (i ? ", " : "") + p.options[i];
          auto& diag = diags().report(
              DiagKind::unknown_option, x.range,
              fmt::format("`{}` is not an option of {}'s `{}` (expected {})", n.name, b.name, p.name, list));
          std::string best = closest_name(n.name, p.options);
          if (!best.empty()) {
            diag.help = fmt::format("did you mean `{}`?", best);
            diag.replacement = best;
          }
          a.type = Type::error();
          ok = false;
          return;
        }
        a.option = n.name;
        a.type = Type::symbol(n.name);
        a.value = Value::make_symbol(n.name);
        n.target = Binding{Binding::Option, n.name, {}, nullptr, nullptr};
        x.type = a.type;
        x.constant = a.value;
        return;
      }
    }
    a.type = check(x);
    a.value = x.constant;
  };

  std::set<std::string> named_seen;
  bool misnamed = false;  // a named argument matched no parameter (a missing one is then likely it)
  if (call) {
    for (Arg& arg : call->args) {
      if (arg.name.empty()) {
        if (next < b.params.size() && b.params[next].variadic) {
          BoundArg& v = ctx.args[next];
          v.present = true;
          BoundArg item;
          check_value(b.params[next], *arg.value, item);
          v.rest.push_back(std::move(item));
          continue;
        }
        if (next >= b.params.size()) {
          size_t takes = b.params.size() - (piped ? 1 : 0);
          auto& diag = diags().report(
              DiagKind::too_many_arguments, arg.value->range,
              piped ? fmt::format("too many arguments: `{}` takes {} besides its input from `|`", b.name, takes)
                    : fmt::format("too many arguments: `{}` takes {}", b.name, takes));
          diag.notes.push_back({{}, "signature: " + b.signature()});
          ok = false;
          check(*arg.value);
          continue;
        }
        check_value(b.params[next], *arg.value, ctx.args[next]);
        ++next;
        continue;
      }
      auto it = std::find_if(b.params.begin(), b.params.end(), [&](const ParamSpec& p) { return p.name == arg.name; });
      if (it == b.params.end()) {
        std::vector<std::string> names;
        for (auto& p : b.params) names.push_back(p.name);
        auto& diag = diags().report(DiagKind::unknown_argument, arg.name_range,
                                    fmt::format("`{}` has no argument `{}`", b.name, arg.name));
        std::string best = closest_name(arg.name, names);
        if (!best.empty()) {
          diag.help = fmt::format("did you mean `{}`?", best);
          diag.replacement = best;
        } else {
          diag.notes.push_back({{}, "signature: " + b.signature()});
        }
        ok = false;
        misnamed = true;
        if (arg.value->kind != ExprKind::Lambda) check(*arg.value);
        continue;
      }
      size_t idx = static_cast<size_t>(it - b.params.begin());
      if (ctx.args[idx].present) {
        diags().report(DiagKind::duplicate_argument, arg.name_range,
                       fmt::format("argument `{}` of `{}` is given twice", arg.name, b.name));
        ok = false;
        continue;
      }
      named_seen.insert(arg.name);
      check_value(*it, *arg.value, ctx.args[idx]);
    }
  }
  ctx_ = saved;
  for (size_t i = 0; i < b.params.size(); ++i) {
    if (b.params[i].required && !ctx.args[i].present && !b.params[i].variadic && misnamed) {
      ok = false;
    } else if (b.params[i].required && !ctx.args[i].present && !b.params[i].variadic) {
      auto& diag = diags().report(DiagKind::missing_argument, call ? call->args_range : ctx.range,
                                  fmt::format("`{}` needs its `{}` argument", b.name, b.params[i].name));
      diag.notes.push_back({{}, "signature: " + b.signature()});
      ok = false;
    }
    if (ctx.args[i].present && ctx.args[i].type.is_error() && ctx.args[i].expr &&
        ctx.args[i].expr->kind != ExprKind::Lambda)
      ok = false;
    for (auto& r : ctx.args[i].rest)
      if (r.type.is_error()) ok = false;
  }
  return ok;
}

Type Checker::call_builtin(const Builtin& b, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range) {
  CallContext ctx{*this, b, call, range, {}, nullptr};
  if (b.kind == BuiltinKind::Source && current_decl_ && current_decl_->kind == DeclKind::Source &&
      current_decl_->value.get() == static_cast<Expr*>(call))
    ctx.decl = current_decl_;
  if (!bind_args(b, call, piped, piped_type, ctx)) return Type::error();
  Type t = b.rule ? b.rule(ctx) : Type::error();
  // Only a tfrecord source's own element is one that interleave can follow: any stage clears it.
  if (t.kind == TypeKind::Dataset && t.element) {
    const bool tfrecord = b.kind == BuiltinKind::Source && b.name == "tfrecord";
    if (t.element->tfrecord_source != tfrecord) {
      ElementInfo e = *t.element;
      e.tfrecord_source = tfrecord;
      t = Type::dataset(std::move(e));
    }
  }
  // Scalar math on constants folds (`tanh(0.5)`, `max(1, 2)`), so consts may use it.
  if (b.kind == BuiltinKind::Op && call && !t.is_error()) {
    std::vector<Value> values;
    bool all = !ctx.args.empty();
    for (auto& a : ctx.args) {
      if (!a.present) continue;
      if (!a.value) all = false;
      else values.push_back(*a.value);
    }
    if (all) {
      FoldResult f = fold_call(b.name, values, t.dtype);
      if (f.value) call->constant = f.value;
    }
  }
  return t;
}

Type Checker::call_cast(DType to, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range) {
  Type in;
  Expr* arg = nullptr;
  size_t nargs = (call ? call->args.size() : 0) + (piped ? 1 : 0);
  if (nargs != 1 || (call && !call->args.empty() && !call->args[0].name.empty())) {
    diags().report(nargs == 0 ? DiagKind::missing_argument : DiagKind::too_many_arguments, range,
                   fmt::format("the cast `{}(x)` takes exactly one argument", dtype_name(to)));
    return Type::error();
  }
  if (piped) {
    in = *piped_type;
    arg = piped;
  } else {
    arg = call->args[0].value.get();
    in = check(*arg);
  }
  if (in.is_error()) return in;
  if (!in.is_tensor()) {
    diags().report(DiagKind::invalid_cast, range,
                   fmt::format("cannot cast {} to {}", type_to_string(in), dtype_name(to)));
    return Type::error();
  }
  if ((in.dtype == DType::Bytes) != (to == DType::Bytes)) {
    auto& diag = diags().report(DiagKind::invalid_cast, range,
                                fmt::format("cannot cast {} to {}", type_to_string(in), dtype_name(to)));
    if (in.dtype == DType::Bytes)
      diag.help = "declare the feature with a byte length (`bytes[194]`) to read it as u8, or decode it";
    return Type::error();
  }
  Type r = Type::tensor(to, in.shape);
  if (call && arg->constant && arg->constant->kind != Value::List) call->constant = convert_value(*arg->constant, to);
  return r;
}

Type Checker::call_fn(const Decl& fn, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range) {
  Type result = global_type(fn, range);
  std::vector<Type> params;
  for (const Param& p : fn.params) params.push_back(resolve_type(p.type));
  std::vector<std::pair<Type, SourceRange>> given(params.size());
  std::vector<bool> present(params.size(), false);
  size_t next = 0;
  bool ok = true;
  bool misnamed = false;  // a named argument matched no parameter (a missing one is then likely it)
  if (piped) {
    if (params.empty()) {
      diags().report(DiagKind::too_many_arguments, range, fmt::format("fn `{}` takes no input", fn.name));
      check_unbound_args(call);
      return Type::error();
    }
    given[0] = {*piped_type, piped->range};
    present[0] = true;
    next = 1;
  }
  if (call) {
    for (Arg& a : call->args) {
      Type t = check(*a.value);
      size_t idx = next;
      if (!a.name.empty()) {
        auto it = std::find_if(fn.params.begin(), fn.params.end(), [&](const Param& p) { return p.name == a.name; });
        if (it == fn.params.end()) {
          auto& diag = diags().report(DiagKind::unknown_argument, a.name_range,
                                      fmt::format("fn `{}` has no parameter `{}`", fn.name, a.name));
          std::vector<std::string> names;
          for (const Param& p : fn.params) names.push_back(p.name);
          std::string best = closest_name(a.name, names);
          if (!best.empty()) {
            diag.help = fmt::format("did you mean `{}`?", best);
            diag.replacement = best;
          }
          ok = false;
          misnamed = true;
          continue;
        }
        idx = static_cast<size_t>(it - fn.params.begin());
      } else {
        ++next;
      }
      if (idx >= params.size()) {
        diags().report(
            DiagKind::too_many_arguments, a.value->range,
            fmt::format("fn `{}` takes {} argument{}", fn.name, params.size(), params.size() == 1 ? "" : "s"));
        ok = false;
        continue;
      }
      if (present[idx]) {
        diags().report(DiagKind::duplicate_argument, a.value->range,
                       fmt::format("parameter `{}` is given twice", fn.params[idx].name));
        ok = false;
        continue;
      }
      present[idx] = true;
      given[idx] = {t, a.value->range};
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!present[i]) {
      if (!misnamed)
        diags().report(DiagKind::missing_argument, call ? call->args_range : range,
                       fmt::format("fn `{}` needs its `{}` argument", fn.name, fn.params[i].name));
      ok = false;
      continue;
    }
    const Type& want = params[i];
    const Type& got = given[i].first;
    if (want.is_error() || got.is_error()) {
      ok = false;
      continue;
    }
    ParamFit fit = fit_param(want, got);
    if (fit == ParamFit::Ragged) {
      auto& diag =
          diags().report(DiagKind::ragged_value, given[i].second,
                         fmt::format("fn `{}` takes {} as `{}`, but this is {}, whose size is known only at run time",
                                     fn.name, type_to_string(want), fn.params[i].name, type_to_string(got)));
      diag.notes.push_back({fn.params[i].name_range, "the parameter is declared here"});
      diag.help = "declare the parameter with `?` for the dimensions that may vary";
      ok = false;
      continue;
    }
    if (fit != ParamFit::Fits) {
      auto& diag = diags().report(DiagKind::type_mismatch, given[i].second,
                                  fmt::format("fn `{}` takes {} as `{}`, but this is {}", fn.name, type_to_string(want),
                                              fn.params[i].name, type_to_string(got)));
      diag.notes.push_back({fn.params[i].name_range, "the parameter is declared here"});
      if (got.is_tensor() && fit_shape(want.shape, got.shape) == ShapeFit::Fits)
        diag.help = fmt::format("convert it with `{}(...)`", dtype_name(want.dtype));
      ok = false;
    }
  }
  if (!ok) return Type::error();
  Type r = result;
  r.weak = false;
  return r;
}

Checker::ParamFit Checker::fit_param(const Type& want, const Type& got) {
  bool dtype_ok =
      got.is_tensor() && (got.dtype == want.dtype || (got.weak && !(is_float(got.dtype) && !is_float(want.dtype))));
  ShapeFit fit = got.is_tensor() ? fit_shape(want.shape, got.shape) : ShapeFit::Mismatch;
  if (dtype_ok && fit == ShapeFit::Ragged) return ParamFit::Ragged;
  return dtype_ok && fit == ShapeFit::Fits ? ParamFit::Fits : ParamFit::Mismatch;
}

// ---------------------------------------------------------------------------------------------------
// CallContext

const BoundArg& CallContext::arg(std::string_view name) const {
  for (size_t i = 0; i < builtin.params.size(); ++i)
    if (builtin.params[i].name == name) return args[i];
  static const BoundArg none;
  return none;
}

BoundArg& CallContext::arg(std::string_view name) { return const_cast<BoundArg&>(std::as_const(*this).arg(name)); }

Diagnostics& CallContext::diags() { return checker.diags(); }

Diagnostic& CallContext::error(DiagKind kind, SourceRange r, std::string message) {
  return checker.diags().report(kind, r.valid() ? r : range, std::move(message));
}

std::optional<int64_t> CallContext::const_int(std::string_view name, std::optional<int64_t> min) {
  const BoundArg& a = arg(name);
  if (!a.present || a.type.is_error()) return std::nullopt;
  if (!a.type.is_scalar() || !(is_integer(a.type.dtype))) {
    error(DiagKind::integer_expected, a.range,
          fmt::format("`{}` of {} must be an integer, not {}", name, builtin.name, type_to_string(a.type)));
    return std::nullopt;
  }
  if (!a.value && per_element(a)) return min.value_or(1);  // a field of the element: any value is checked at run time
  if (!a.value) {
    error(DiagKind::not_constant, a.range, fmt::format("`{}` of {} must be known at compile time", name, builtin.name));
    return std::nullopt;
  }
  if (min && a.value->i < *min) {
    error(DiagKind::invalid_argument_value, a.range,
          fmt::format("`{}` of {} must be at least {}, not {}", name, builtin.name, *min, a.value->i));
    return std::nullopt;
  }
  return a.value->i;
}

std::optional<double> CallContext::const_number(std::string_view name) {
  const BoundArg& a = arg(name);
  if (!a.present || a.type.is_error()) return std::nullopt;
  if (!a.type.is_scalar() || a.type.dtype == DType::Bytes) {
    error(DiagKind::type_mismatch, a.range,
          fmt::format("`{}` of {} must be a number, not {}", name, builtin.name, type_to_string(a.type)));
    return std::nullopt;
  }
  if (!a.value) {
    error(DiagKind::not_constant, a.range, fmt::format("`{}` of {} must be known at compile time", name, builtin.name));
    return std::nullopt;
  }
  return a.value->as_double();
}

std::optional<std::string> CallContext::const_string(std::string_view name) {
  const BoundArg& a = arg(name);
  if (!a.present || a.type.is_error()) return std::nullopt;
  if (!a.type.is_scalar() || a.type.dtype != DType::Bytes) {
    error(DiagKind::type_mismatch, a.range,
          fmt::format("`{}` of {} must be a string, not {}", name, builtin.name, type_to_string(a.type)));
    return std::nullopt;
  }
  if (!a.value && per_element(a)) return std::string();  // a field of the element, read per element
  if (!a.value) {
    error(DiagKind::not_constant, a.range, fmt::format("`{}` of {} must be known at compile time", name, builtin.name));
    return std::nullopt;
  }
  return a.value->s;
}

std::optional<bool> CallContext::const_bool(std::string_view name) {
  const BoundArg& a = arg(name);
  if (!a.present || a.type.is_error()) return std::nullopt;
  if (!a.type.is_scalar() || a.type.dtype != DType::Bool) {
    error(DiagKind::bool_expected, a.range,
          fmt::format("`{}` of {} must be true or false, not {}", name, builtin.name, type_to_string(a.type)));
    return std::nullopt;
  }
  if (!a.value) {
    error(DiagKind::not_constant, a.range, fmt::format("`{}` of {} must be known at compile time", name, builtin.name));
    return std::nullopt;
  }
  return a.value->b;
}

std::optional<std::vector<int64_t>> CallContext::const_int_list(std::string_view name) {
  const BoundArg& a = arg(name);
  if (!a.present || a.type.is_error()) return std::nullopt;
  if (!a.type.is_tensor() || a.type.rank() != 1 || !is_integer(a.type.dtype)) {
    error(DiagKind::integer_expected, a.range,
          fmt::format("`{}` of {} must be a list of integers, not {}", name, builtin.name, type_to_string(a.type)));
    return std::nullopt;
  }
  if (!a.value || a.value->kind != Value::List) {
    error(DiagKind::not_constant, a.range, fmt::format("`{}` of {} must be known at compile time", name, builtin.name));
    return std::nullopt;
  }
  std::vector<int64_t> out;
  for (const Value& v : a.value->items) out.push_back(v.i);
  return out;
}

std::optional<Type> CallContext::tensor(std::string_view name) {
  const BoundArg& a = arg(name);
  if (!a.present || a.type.is_error()) return std::nullopt;
  if (!a.type.is_tensor()) {
    error(DiagKind::type_mismatch, a.range,
          fmt::format("`{}` of {} must be a tensor, not {}", name, builtin.name, type_to_string(a.type)));
    return std::nullopt;
  }
  return a.type;
}

const ElementInfo* CallContext::dataset(std::string_view name) {
  const BoundArg& a = arg(name);
  if (!a.present || a.type.is_error()) return nullptr;
  if (a.type.kind != TypeKind::Dataset) {
    error(DiagKind::not_a_dataset, a.range,
          fmt::format("{} needs a dataset, but this is {}", builtin.name, type_to_string(a.type)));
    return nullptr;
  }
  if (a.type.element->is_sink) {
    error(DiagKind::stage_after_sink, range,
          fmt::format("`{}` comes after a sink; write(...) must be the last stage", builtin.name));
    return nullptr;
  }
  return a.type.element.get();
}

Type CallContext::lambda(std::string_view name, const std::vector<Type>& param_types) {
  BoundArg& a = arg(name);
  if (!a.present || !a.expr) return Type::error();
  if (a.expr->kind != ExprKind::Lambda) {
    // A named fn is not a function of the element (its parameters are tensors, the element is a record):
    // say how to call it from a function literal instead.
    if (a.expr->kind == ExprKind::Name) {
      const Decl* d = checker.program().global(a.expr->as<NameExpr>()->name);
      if (d && d->kind == DeclKind::Fn) {
        error(DiagKind::type_mismatch, a.range,
              fmt::format("pass a function literal: `{}(r => {}(...))`", builtin.name, d->name));
        return Type::error();
      }
    }
    Type t = checker.check(*a.expr);
    if (!t.is_error())
      error(DiagKind::type_mismatch, a.range,
            fmt::format("`{}` of {} must be a function such as `r => ...`, not {}", name, builtin.name,
                        type_to_string(t)));
    return Type::error();
  }
  Type t = checker.check_lambda(*a.expr->as<LambdaExpr>(), param_types);
  a.type = t;
  return t;
}

Type CallContext::dataset_lambda(std::string_view name, const Type& element) {
  BoundArg& a = arg(name);
  if (!a.present || !a.expr) return Type::error();
  if (a.expr->kind != ExprKind::Lambda) {
    Type t = checker.check(*a.expr);
    if (!t.is_error())
      error(DiagKind::type_mismatch, a.range,
            fmt::format("`{}` of {} must be a function such as `r => range(r.value)`, not {}", name, builtin.name,
                        type_to_string(t)));
    return Type::error();
  }
  Type t = checker.check_dataset_lambda(*a.expr->as<LambdaExpr>(), element);
  a.type = t;
  return t;
}

bool CallContext::per_element(const BoundArg& a) const {
  return checker.element_args_ && a.expr && checker.element_args_->args.count(a.expr) > 0;
}

}  // namespace pipec

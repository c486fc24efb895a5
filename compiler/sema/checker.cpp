// Declarations, scopes and name resolution. Expressions are in check_expr.cpp, calls and argument
// binding in check_call.cpp, train blocks in check_train.cpp.
#include "compiler/sema/checker.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "compiler/sema/const_eval.h"
#include "compiler/sema/promotion.h"

namespace pipec {

void check_program(Program& program, const CheckOptions& options) {
  Checker checker(program, options);
  checker.run();
}

Checker::Checker(Program& program, const CheckOptions& options) : program_(program), options_(options) {}

void Checker::run() {
  match_const_overrides();
  for (auto& m : program_.modules)
    for (auto& d : m->decls) check_decl(*d);
  // With syntax errors in the file, a use may sit in the part that did not parse: no unused warnings then.
  bool syntax_errors = false;
  for (auto& d : program_.main().decls) syntax_errors = syntax_errors || d->syntax_error;
  for (const Diagnostic& diag : diags().all())
    if (diag.range.file == program_.main().file &&
        (diag.kind == DiagKind::syntax_error || diag.kind == DiagKind::bad_character ||
         diag.kind == DiagKind::unterminated_string || diag.kind == DiagKind::nesting_too_deep))
      syntax_errors = true;
  if (options_.warnings && !syntax_errors) warn_unused_globals();
}

void Checker::check_decl(const Decl& decl) {
  State& st = state_[&decl];
  if (st != State::Unchecked) return;
  st = State::InProgress;
  // Checking one declaration may start checking another (a const used by a pipeline), so the state
  // of the one in progress is saved around it.
  std::vector<Scope> saved_scopes;
  std::swap(saved_scopes, scopes_);
  CheckContext saved_ctx = ctx_;
  const Decl* saved_decl = current_decl_;
  const ElementInfo* saved_train = train_element_;
  const Expr* saved_head = head_;
  const TrainEntrySpec* saved_entry = entry_;
  current_decl_ = &decl;
  train_element_ = nullptr;
  head_ = nullptr;
  entry_ = nullptr;
  in_progress_.push_back(&decl);
  bool saved_muted = diags().muted();
  diags().set_muted(decl.syntax_error);
  Decl& d = const_cast<Decl&>(decl);
  switch (d.kind) {
    case DeclKind::Import: break;
    case DeclKind::Const: check_const(d); break;
    case DeclKind::Fn: check_fn(d); break;
    case DeclKind::Source: check_source(d); break;
    case DeclKind::Pipeline: check_pipeline(d); break;
    case DeclKind::Model: check_model(d); break;
    case DeclKind::Train: check_train(d); break;
  }
  diags().set_muted(saved_muted);
  in_progress_.pop_back();
  std::swap(saved_scopes, scopes_);
  ctx_ = saved_ctx;
  current_decl_ = saved_decl;
  train_element_ = saved_train;
  head_ = saved_head;
  entry_ = saved_entry;
  state_[&decl] = State::Done;
}

Type Checker::global_type(const Decl& d, SourceRange use) {
  used_[&d] = true;
  State st = state_[&d];
  if (st == State::InProgress) {
    // The chain of declarations from `d` back to itself: `A -> B -> A`.
    std::string chain;
    auto from = std::find(in_progress_.begin(), in_progress_.end(), &d);
    for (auto it = from; it != in_progress_.end(); ++it) chain += (*it)->name + " -> ";
    chain += d.name;
    std::string msg = from + 1 == in_progress_.end()
                          ? fmt::format("{} `{}` refers to itself", decl_kind_name(d.kind), d.name)
                          : fmt::format("{} `{}` refers to itself through {}", decl_kind_name(d.kind), d.name, chain);
    auto& diag = diags().report(DiagKind::recursive_definition, use, msg);
    diag.notes.push_back({d.name_range, fmt::format("`{}` is defined here", d.name)});
    return Type::error();
  }
  if (st == State::Unchecked) check_decl(d);
  // A declaration with a syntax error is only partly there; its uses stay quiet rather than guess.
  if (d.syntax_error) return Type::error();
  return d.type;
}

// constDecl : CONST name (COLON type)? ASSIGN expr ;
void Checker::check_const(Decl& d) {
  ctx_ = CheckContext::Const;
  // The spec's own value is checked even when -D replaces it: the spec must stay valid without -D.
  check_const_value(d);
  if (auto it = overrides_.find(&d); it != overrides_.end()) apply_const_override(d, *it->second);
}

void Checker::match_const_overrides() {
  std::map<std::string, const ParsedOverride*> seen;
  std::vector<std::string> consts;
  for (const auto& d : program_.main().decls)
    if (d->kind == DeclKind::Const) consts.push_back(d->name);
  for (const ParsedOverride& o : program_.const_overrides) {
    if (auto [first, inserted] = seen.emplace(o.name, &o); !inserted) {
      auto& diag =
          diags().report(DiagKind::duplicate_definition, o.name_range, fmt::format("`-D {}` is given twice", o.name));
      diag.notes.push_back({first->second->name_range, "the first is here"});
      continue;
    }
    const Decl* target = nullptr;
    for (const auto& d : program_.main().decls)
      if (d->kind != DeclKind::Import && d->name == o.name) target = d.get();
    if (target && target->kind == DeclKind::Const) {
      overrides_[target] = &o;
      continue;
    }
    if (target) {
      auto& diag = diags().report(
          DiagKind::unknown_const_override, o.name_range,
          fmt::format("`{}` is a {}, not a const: -D sets consts only", o.name, decl_kind_name(target->kind)));
      diag.notes.push_back({target->name_range, fmt::format("`{}` is declared here", o.name)});
      continue;
    }
    auto& diag = diags().report(DiagKind::unknown_const_override, o.name_range,
                                fmt::format("the spec declares no const `{}`", o.name));
    if (const Decl* imported = program_.global(o.name)) {
      diag.notes.push_back({imported->name_range, fmt::format("`{}` is declared in an imported file; -D sets the "
                                                              "consts of the spec itself",
                                                              o.name)});
    } else if (std::string best = closest_name(o.name, consts); !best.empty()) {
      diag.help = fmt::format("did you mean `{}`?", best);
      diag.replacement = best;
    }
  }
}

void Checker::apply_const_override(Decl& d, const ParsedOverride& o) {
  if (!o.value) return;  // not an expression: reported by the parser
  Expr& value = *o.value;
  Type got = check(value);
  if (got.is_error()) return;
  if (!value.constant) {
    diags().report(DiagKind::not_constant, value.range,
                   fmt::format("the value of `-D {}` is not known at compile time", o.name));
    return;
  }
  const Type want = d.type;
  if (want.is_error()) return;  // the spec's own value is wrong, and reported
  // The rule of a declared type (check_const_value): the same dtype and shape, or an untyped literal of
  // a kind the dtype takes (an integer for a float const, not a float for an integer one).
  bool fits = got.is_tensor() && want.is_tensor() && got.shape == want.shape &&
              (got.dtype == want.dtype || (got.weak && !(is_float(got.dtype) && !is_float(want.dtype))));
  if (!fits) {
    auto& diag = diags().report(DiagKind::type_mismatch, value.range,
                                fmt::format("const `{}` is {}, but `-D {}` gives it a value of type {}", d.name,
                                            type_to_string(want), o.name, type_to_string(got)));
    diag.notes.push_back({d.declared_type ? d.declared_type->range : d.value->range,
                          fmt::format("the type of `{}` comes from here", d.name)});
    return;
  }
  d.value->constant =
      value.constant->kind == Value::List ? *value.constant : convert_value(*value.constant, want.dtype);
}

void Checker::check_const_value(Decl& d) {
  Type t = check(*d.value);
  if (t.is_error()) {
    d.type = t;
    return;
  }
  if (!d.value->constant) {
    diags().report(DiagKind::not_constant, d.value->range,
                   fmt::format("the value of const `{}` is not known at compile time", d.name));
    d.type = Type::error();
    return;
  }
  if (d.declared_type) {
    Type want = resolve_type(*d.declared_type);
    if (!want.is_error()) {
      bool ok = t.is_tensor() && want.shape == t.shape &&
                (t.dtype == want.dtype || (t.weak && !(is_float(t.dtype) && !is_float(want.dtype))));
      if (!ok) {
        diags().report(DiagKind::type_mismatch, d.value->range,
                       fmt::format("const `{}` is declared {} but its value is {}", d.name, type_to_string(want),
                                   type_to_string(t)));
      } else if (d.value->constant->kind != Value::List) {
        d.value->constant = convert_value(*d.value->constant, want.dtype);
      }
      t = want;
    }
  }
  d.type = t;
}

// fnDecl : FN name LPAREN paramList? RPAREN (ARROW type)? (ASSIGN expr | block) ;
void Checker::check_fn(Decl& d) {
  ctx_ = CheckContext::Fn;
  push_scope();
  std::set<std::string> seen;
  for (const Param& p : d.params) {
    if (!seen.insert(p.name).second)
      diags().report(DiagKind::duplicate_definition, p.name_range,
                     fmt::format("parameter `{}` is declared twice", p.name));
    Local l;
    l.binding = Binding{Binding::Param, p.name, p.name_range, nullptr, nullptr};
    l.type = resolve_type(p.type);
    l.used = true;  // unused parameters are part of a signature, not a mistake worth a warning
    scopes_.back().names[p.name] = l;
  }
  Type body = check(*d.value);
  pop_scope(options_.warnings);
  if (d.result_type) {
    Type want = resolve_type(*d.result_type);
    if (!want.is_error() && !body.is_error()) {
      // A declared `?` accepts any size (`-> f32[?]`).
      bool ok = body.is_tensor() && fit_shape(want.shape, body.shape) == ShapeFit::Fits &&
                (body.dtype == want.dtype || (body.weak && !(is_float(body.dtype) && !is_float(want.dtype))));
      if (!ok) {
        auto& diag = diags().report(DiagKind::return_type_mismatch, d.value->range,
                                    fmt::format("fn `{}` returns {} but is declared to return {}", d.name,
                                                type_to_string(body), type_to_string(want)));
        diag.notes.push_back({d.result_type->range, "the result type is declared here"});
      }
    }
    d.type = want;
  } else {
    d.type = body;
  }
}

// sourceDecl : SOURCE name ASSIGN expr schema? ;
void Checker::check_source(Decl& d) {
  ctx_ = CheckContext::Source;
  head_ = head_name(d.value.get());
  entry_ = nullptr;
  Type t = check(*d.value);
  head_ = nullptr;
  if (!t.is_error() && t.kind != TypeKind::Dataset) {
    diags().report(DiagKind::not_a_dataset, d.value->range,
                   fmt::format("source `{}` must be a dataset such as tfrecord(...) or files(...), not {}", d.name,
                               type_to_string(t)));
    t = Type::error();
  }
  d.type = t;
}

// pipelineDecl : PIPELINE name ASSIGN expr ;
void Checker::check_pipeline(Decl& d) {
  ctx_ = CheckContext::Pipeline;
  head_ = head_name(d.value.get());
  entry_ = nullptr;
  Type t = check(*d.value);
  head_ = nullptr;
  if (!t.is_error() && t.kind != TypeKind::Dataset) {
    diags().report(DiagKind::not_a_dataset, d.value->range,
                   fmt::format("pipeline `{}` must be a dataset, not {}", d.name, type_to_string(t)));
    t = Type::error();
  }
  d.type = t;
}

// modelDecl : MODEL name LPAREN paramList? RPAREN (ARROW type)? block ;
void Checker::check_model(Decl& d) {
  ctx_ = CheckContext::Model;
  push_scope();
  for (const Param& p : d.params) {
    Local l;
    l.binding = Binding{Binding::Param, p.name, p.name_range, nullptr, nullptr};
    l.type = resolve_type(p.type);
    l.used = true;
    scopes_.back().names[p.name] = l;
  }
  Type body = check(*d.value);
  pop_scope(options_.warnings);
  if (d.result_type && !body.is_error()) {
    Type want = resolve_type(*d.result_type);
    if (!want.is_error() && (!body.is_tensor() || body.shape != want.shape)) {
      auto& diag = diags().report(DiagKind::layer_shape_mismatch, d.value->as<BlockExpr>()->result->range,
                                  fmt::format("model `{}` produces {} but is declared to return {}", d.name,
                                              type_to_string(body), type_to_string(want)));
      diag.notes.push_back({d.result_type->range, "the output type is declared here"});
    }
  }
  d.type = Type::model(d.name);
}

// type : name (LBRACK dim (COMMA dim)* RBRACK)? ;
Type Checker::resolve_type(const TypeSyntax& t) {
  auto dt = parse_dtype(t.name);
  if (!dt) {
    std::vector<std::string> names;
#define X(name, text, size) names.push_back(text);
    PIPEC_DTYPES(X)
#undef X
    auto& diag = diags().report(DiagKind::unknown_type, t.range, fmt::format("unknown type `{}`", t.name));
    std::string best = closest_name(t.name, names);
    // Spellings from other frameworks.
    static const std::map<std::string, std::string> aliases = {
        {"int", "i64"},     {"long", "i64"},      {"float", "f32"},    {"double", "f64"},   {"half", "f16"},
        {"int8", "i8"},     {"int16", "i16"},     {"int32", "i32"},    {"int64", "i64"},    {"uint8", "u8"},
        {"uint16", "u16"},  {"uint32", "u32"},    {"uint64", "u64"},   {"float16", "f16"},  {"float32", "f32"},
        {"float64", "f64"}, {"bfloat16", "bf16"}, {"boolean", "bool"}, {"string", "bytes"}, {"str", "bytes"},
        {"byte", "u8"}};
    if (auto a = aliases.find(t.name); a != aliases.end()) best = a->second;
    if (!best.empty()) {
      diag.help = fmt::format("did you mean `{}`?", best);
      diag.replacement = best;
    }
    return Type::error();
  }
  std::vector<int64_t> shape;
  for (const DimSyntax& dim : t.dims) {
    switch (dim.kind) {
      case DimSyntax::Known: shape.push_back(dim.value); break;
      case DimSyntax::Unknown: shape.push_back(kUnknownDim); break;
      case DimSyntax::Named: {
        const Decl* c = program_.global(dim.name);
        if (!c || c->kind != DeclKind::Const) {
          diags().report(DiagKind::unknown_name, dim.range,
                         fmt::format("dimension `{}` is not an integer const", dim.name));
          return Type::error();
        }
        global_type(*c, dim.range);
        const auto& v = c->value->constant;
        if (!v || v->kind != Value::Int || v->i < 0) {
          diags().report(DiagKind::integer_expected, dim.range,
                         fmt::format("dimension `{}` must be a non-negative integer const", dim.name));
          return Type::error();
        }
        shape.push_back(v->i);
        break;
      }
    }
  }
  return Type::tensor(*dt, std::move(shape));
}

Checker::Local* Checker::lookup_local(const std::string& name) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->names.find(name);
    if (f != it->names.end()) return &f->second;
  }
  return nullptr;
}

void Checker::pop_scope(bool warn_unused) {
  if (warn_unused) {
    for (auto& [name, local] : scopes_.back().names) {
      if (local.used || local.binding.kind != Binding::Local || name.rfind('_', 0) == 0) continue;
      diags().report(DiagKind::unused_binding, local.binding.def_range, fmt::format("`{}` is never used", name)).help =
          "remove it, or start its name with `_` to keep it";
    }
  }
  scopes_.pop_back();
}

std::vector<std::string> Checker::visible_names() {
  std::vector<std::string> names;
  for (auto& s : scopes_)
    for (auto& [n, l] : s.names) names.push_back(n);
  for (auto& [n, d] : program_.globals) names.push_back(n);
  if (train_element_)
    for (auto& f : train_element_->fields) names.push_back(f.name);
  return names;
}

void Checker::warn_unused_globals() {
  // Only declarations of the main file: an import's unused helpers are not the user's concern.
  std::set<const Decl*> used;
  for (auto& [d, u] : used_)
    if (u) used.insert(d);
  for (auto& d : program_.main().decls) {
    if (d->kind != DeclKind::Const && d->kind != DeclKind::Fn && d->kind != DeclKind::Source) continue;
    if (used.count(d.get()) || d->name.rfind('_', 0) == 0) continue;
    if (program_.global(d->name) != d.get()) continue;  // a duplicate, already reported as such
    diags().report(DiagKind::unused_declaration, d->name_range,
                   fmt::format("{} `{}` is never used", decl_kind_name(d->kind), d->name));
  }
}

}  // namespace pipec

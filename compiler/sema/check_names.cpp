// The name probe (CheckOptions::name_probe): what the checker knows at one name and every name it would
// accept there, recorded in Program::name_site for the language server's completion. The candidates
// follow the same rules as resolution (callable_kinds, fit_param, the train entry table), so what the
// editor offers is what `pipec check` takes.
#include <algorithm>
#include <functional>
#include <set>

#include "compiler/sema/checker.h"

namespace pipec {

namespace {

/// The order candidates are offered in: what is in scope, then what the spec declares, then what the
/// context calls (in the order of its families: a model's layers before its ops), then casts.
int presentation_rank(NameCandidate::Kind k) {
  switch (k) {
    case NameCandidate::Option:
    case NameCandidate::Local:
    case NameCandidate::Field: return 0;
    case NameCandidate::Fn:
    case NameCandidate::Model:
    case NameCandidate::Dataset:
    case NameCandidate::Const: return 1;
    case NameCandidate::Builtin: return 2;
    case NameCandidate::Cast: return 3;
  }
  return 4;
}

std::vector<DType> all_dtypes() {
  return {
#define PIPEC_DTYPE_VALUE(name, text, size) DType::name,
      PIPEC_DTYPES(PIPEC_DTYPE_VALUE)
#undef PIPEC_DTYPE_VALUE
  };
}

}  // namespace

const Expr* Checker::head_name(const Expr* e) {
  for (int guard = 0; e && guard < 100000; ++guard) {
    if (e->kind == ExprKind::Pipe) e = e->as<PipeExpr>()->lhs.get();
    else if (e->kind == ExprKind::Call) e = e->as<CallExpr>()->callee.get();
    else return e->kind == ExprKind::Name ? e : nullptr;
  }
  return nullptr;
}

bool Checker::at_probe(const Expr& e) const {
  return options_.name_probe && !program_.name_site && !program_.modules.empty() &&
         e.range.file == program_.main().file && e.range.begin == *options_.name_probe;
}

void Checker::record_name_site(const Expr& e, bool callee, const Type* piped_type,
                               const std::vector<std::string>* options) {
  NameSite site;
  site.context = ctx_;
  site.input = piped_input(piped_type);
  site.callee = callee;
  if (options) {
    // An option argument (`padding = same`, `precision = fp32`) takes its words.
    for (const std::string& w : *options) site.candidates.push_back({NameCandidate::Option, w, nullptr, nullptr, {}});
  } else {
    site.candidates = name_candidates(e, callee, piped_type);
  }
  program_.name_site = std::move(site);
}

std::vector<NameCandidate> Checker::name_candidates(const Expr& e, bool callee, const Type* piped_type) {
  std::vector<NameCandidate> out;
  std::set<std::string> seen;
  // Added in the order names are resolved (locals, train fields, declarations, casts, builtins), so that
  // a name offered once means what the checker would take it for.
  auto add = [&](NameCandidate c) {
    if (seen.insert(c.name).second) out.push_back(std::move(c));
  };
  auto in_progress = [&](const Decl* d) {
    return std::find(in_progress_.begin(), in_progress_.end(), d) != in_progress_.end();
  };
  auto add_globals = [&](std::initializer_list<DeclKind> kinds, NameCandidate::Kind as,
                         const std::function<bool(const Decl&)>& accept = nullptr) {
    for (const auto& [name, d] : program_.globals) {
      if (std::find(kinds.begin(), kinds.end(), d->kind) == kinds.end()) continue;
      if (in_progress(d)) continue;  // a use would be a recursive definition
      if (accept && !accept(*d)) continue;
      add({as, name, nullptr, d, {}});
    }
  };
  auto add_builtins = [&](const std::vector<BuiltinKind>& kinds) {
    for (BuiltinKind k : kinds)
      for (const Builtin& b : all_builtins())
        if (b.kind == k) add({NameCandidate::Builtin, b.name, &b, nullptr, {}});
  };
  auto add_casts = [&](const Type* input) {
    if (ctx_ == CheckContext::Format) return;
    for (DType t : all_dtypes()) {
      // call_cast: bytes convert only to bytes, numbers only to numbers.
      if (input && input->is_tensor() && (input->dtype == DType::Bytes) != (t == DType::Bytes)) continue;
      add({NameCandidate::Cast, std::string(dtype_name(t)), nullptr, nullptr, {}});
    }
  };
  // A local shadows every declaration and builtin of its name, and is not callable.
  if (callee)
    for (const Scope& scope : scopes_)
      for (const auto& [name, local] : scope.names) seen.insert(name);
  // A fn call is not a constant (so not in a const) and takes tensors (so not in an output format).
  bool fns_here = ctx_ != CheckContext::Const && ctx_ != CheckContext::Format;
  PipedInput input = piped_input(piped_type);

  if (&e == head_) {
    // The head of a source or pipeline names a dataset; the head of a train entry what the entry takes.
    if (!entry_) {
      add_globals({DeclKind::Source, DeclKind::Pipeline}, NameCandidate::Dataset);
      add_builtins({BuiltinKind::Source});
    } else if (entry_->kind) {
      add_builtins({*entry_->kind});
    } else if (std::string_view(entry_->key) == "data") {
      add_globals({DeclKind::Source, DeclKind::Pipeline}, NameCandidate::Dataset);
    } else if (std::string_view(entry_->key) == "model") {
      add_globals({DeclKind::Model}, NameCandidate::Model);
    } else {  // steps, epochs: a constant integer
      add_globals({DeclKind::Const}, NameCandidate::Const,
                  [](const Decl& d) { return d.type.is_scalar() && is_integer(d.type.dtype); });
    }
  } else if (input == PipedInput::Dataset) {
    add_builtins(callable_kinds(ctx_, input));  // stages and sinks; fns and casts take tensors
  } else if (input != PipedInput::None) {
    // `x | name` on a tensor (or an input whose type is unknown): fns whose first parameter takes it,
    // casts, then the context's builtins.
    if (fns_here)
      add_globals({DeclKind::Fn}, NameCandidate::Fn, [&](const Decl& fn) {
        if (fn.params.empty()) return false;
        return input == PipedInput::Unknown ||
               fit_param(resolve_type(fn.params[0].type), *piped_type) == ParamFit::Fits;
      });
    // In a model, another model whose first input takes it (a block, check_block.cpp).
    if (ctx_ == CheckContext::Model)
      add_globals({DeclKind::Model}, NameCandidate::Model, [&](const Decl& m) {
        if (m.params.empty()) return false;
        return input == PipedInput::Unknown || fit_param(resolve_type(m.params[0].type), *piped_type) == ParamFit::Fits;
      });
    add_casts(input == PipedInput::Tensor ? piped_type : nullptr);
    add_builtins(callable_kinds(ctx_, input));
  } else {
    // A value, or a call `name(...)`: what is in scope (unless called), then what this context calls.
    if (!callee) {
      for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
        for (const auto& [name, local] : it->names) add({NameCandidate::Local, name, nullptr, nullptr, local.type});
      if (train_element_)
        for (const Field& f : train_element_->fields)
          add({NameCandidate::Field, f.name, nullptr, nullptr, f.type ? *f.type : Type::error()});
      add_globals({DeclKind::Const}, NameCandidate::Const);
      if (ctx_ == CheckContext::Source || ctx_ == CheckContext::Pipeline)
        add_globals({DeclKind::Source, DeclKind::Pipeline}, NameCandidate::Dataset);  // zip(a, b), interleave
    }
    if (fns_here) add_globals({DeclKind::Fn}, NameCandidate::Fn);
    if (ctx_ == CheckContext::Model && callee) add_globals({DeclKind::Model}, NameCandidate::Model);  // blocks
    add_casts(nullptr);
    // Losses, optimizers and strategies make the values of train entries, not arguments (above: heads).
    if (ctx_ != CheckContext::Train) add_builtins(callable_kinds(ctx_, PipedInput::None));
  }
  std::stable_sort(out.begin(), out.end(), [](const NameCandidate& a, const NameCandidate& b) {
    return presentation_rank(a.kind) < presentation_rank(b.kind);
  });
  return out;
}

}  // namespace pipec

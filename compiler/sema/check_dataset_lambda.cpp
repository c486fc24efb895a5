// The function of flat_map and interleave: `r => text_lines(r.path) | take(3)` maps an element to a
// dataset. Its body is a pipeline checked as a pipeline declaration's value is; the element reaches it
// only through the arguments of the source at its head, each the element's field itself (`r.path`,
// `r.value`), which the source then takes per element instead of as a constant. Any other read of the
// element (`r.value * 2`, `r` inside a map of the body) is element_read: the runtime builds each
// element's pipeline by putting the field's value in place of the argument, and nothing more.
#include <fmt/format.h>

#include "compiler/sema/checker.h"

namespace pipec {

namespace {

// The source call at the head of `x | a | b`, or null when the head is not a call (a declared dataset).
CallExpr* head_call(Expr* e) {
  while (e && e->kind == ExprKind::Pipe) e = e->as<PipeExpr>()->lhs.get();
  return e && e->kind == ExprKind::Call ? e->as<CallExpr>() : nullptr;
}

// Whether the argument `param` of source `source` may be a field of the element: the files a file
// source reads, and range's bounds. The others (a record size, a compression) shape the element or
// its reading and stay constants.
bool per_element_param(const std::string& source, const std::string& param) {
  if (source == "range") return true;
  if (source == "files" || source == "list_files") return param == "pattern";
  if (source == "text_lines" || source == "fixed_length_records") return param == "files";
  return false;
}

}  // namespace

Type Checker::check_dataset_lambda(LambdaExpr& lambda, const Type& element) {
  if (lambda.params.size() != 1) {
    diags().report(DiagKind::type_mismatch, lambda.range,
                   fmt::format("this function takes {} parameters, but it is given one element", lambda.params.size()));
    return Type::error();
  }
  ElementArgs reads;
  reads.scope = scopes_.size();  // the scope check_lambda pushes for the parameter
  reads.param = lambda.params[0];
  // The head source's arguments that are a field of the element, where the source takes them per element.
  if (CallExpr* call = head_call(lambda.body.get());
      call && call->callee->kind == ExprKind::Name && !program_.global(call->callee->as<NameExpr>()->name)) {
    const Builtin* b = find_builtin(call->callee->as<NameExpr>()->name, {BuiltinKind::Source});
    size_t next = 0;
    for (Arg& a : call->args) {
      std::string param = a.name;
      if (param.empty() && b && next < b->params.size()) param = b->params[next++].name;
      Expr* x = a.value.get();
      if (!b || x->kind != ExprKind::Member) continue;
      Expr* base = x->as<MemberExpr>()->base.get();
      if (base->kind != ExprKind::Name || base->as<NameExpr>()->name != reads.param) continue;
      if (!per_element_param(b->name, param)) {
        reads.constant_args[base->as<NameExpr>()] = fmt::format("`{}` of {}", param, b->name);
        continue;
      }
      reads.args.insert(x);
      reads.names.insert(base->as<NameExpr>());
    }
  }
  ElementArgs* saved_reads = element_args_;
  reads.outer = element_args_;
  CheckContext saved = ctx_;
  element_args_ = &reads;
  // check_lambda checks a body in a map's context: a dataset's body names sources and stages.
  push_scope();
  Local l;
  l.binding = Binding{Binding::LambdaParam, lambda.params[0], lambda.param_ranges[0], nullptr, nullptr};
  l.type = element;
  l.used = true;
  scopes_.back().names[lambda.params[0]] = l;
  lambda.param_types = {element};
  ctx_ = CheckContext::Pipeline;
  Type r = check(*lambda.body);
  ctx_ = saved;
  pop_scope(options_.warnings);
  element_args_ = saved_reads;
  lambda.type = r;
  return r;
}

bool Checker::misplaced_element_read(const NameExpr& e) {
  // Which scope the name resolved in: a dataset function's parameter, or a binding inside it that hides it.
  size_t found = scopes_.size();
  for (size_t i = scopes_.size(); i-- > 0;)
    if (scopes_[i].names.count(e.name)) {
      found = i;
      break;
    }
  const ElementArgs* owner = element_args_;
  while (owner && !(owner->scope == found && owner->param == e.name)) owner = owner->outer;
  // Only the innermost function's head source takes its element's fields.
  if (!owner || (owner == element_args_ && owner->names.count(&e))) return false;
  if (auto it = owner->constant_args.find(&e); owner == element_args_ && it != owner->constant_args.end()) {
    auto& diag = diags().report(
        DiagKind::element_read, e.range,
        fmt::format("{} must be a constant: it cannot take a field of the element `{}`", it->second, e.name));
    diag.help = "the files or pattern of a file source and the bounds of range take fields of the element";
    return true;
  }
  auto& diag = diags().report(
      DiagKind::element_read, e.range,
      fmt::format("the element `{}` can be read only as an argument of the source the function starts with", e.name));
  diag.help = fmt::format(
      "pass a field itself, as in `text_lines({0}.path)` or `range({0}.value)`; compute other values with a map "
      "before this stage",
      e.name);
  return true;
}

}  // namespace pipec

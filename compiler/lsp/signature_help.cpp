// Signature help: inside the parentheses of a call, the signature of what the checker resolved the callee
// to (the layer `dense` in a model, the output format `tfrecord` inside write(...), your fn) with the
// parameter the cursor is on. After `x | f(`, x is the first parameter, so the first argument in the
// parentheses is the second one.
#include "compiler/front/ast_query.h"
#include "compiler/lsp/analysis.h"
#include "compiler/lsp/text_scan.h"
#include "compiler/sema/builtins.h"

namespace pipec::lsp {

namespace {

/// The call whose `(` is at `open` in the main file of `program`, and whether it is the right side of a
/// pipe (then its first parameter is the piped value).
struct CallSite {
  const CallExpr* call = nullptr;
  bool piped = false;
};

CallSite call_at(const Program& program, uint32_t open) {
  CallSite site;
  if (program.modules.empty()) return site;
  const Decl* d = decl_at(program.main(), open);
  if (!d) return site;
  walk_exprs(*d, [&](const Expr& e) {
    if (e.kind == ExprKind::Call && e.as<CallExpr>()->args_range.begin == open &&
        e.as<CallExpr>()->args_range.file == program.main().file)
      site.call = e.as<CallExpr>();
  });
  if (!site.call) return site;
  walk_exprs(*d, [&](const Expr& e) {
    if (e.kind == ExprKind::Pipe && e.as<PipeExpr>()->rhs.get() == site.call) site.piped = true;
  });
  return site;
}

/// Builds "name(a, b = 1)" and the [begin, end) of each parameter in it.
class LabelBuilder {
 public:
  explicit LabelBuilder(const std::string& name) : label_(name + "(") {}
  void param(const std::string& text) {
    if (!params_.empty()) label_ += ", ";
    uint32_t begin = static_cast<uint32_t>(label_.size());
    label_ += text;
    params_.push_back({begin, static_cast<uint32_t>(label_.size())});
  }
  SignatureHelp finish(std::string suffix, std::string doc) {
    return {label_ + ")" + suffix, std::move(doc), std::move(params_), 0};
  }

 private:
  std::string label_;
  std::vector<std::pair<uint32_t, uint32_t>> params_;
};

std::optional<SignatureHelp> for_builtin(const Builtin& b, const ArgumentAt& arg, bool piped) {
  LabelBuilder label(b.name);
  for (const ParamSpec& p : b.params) {
    std::string text = p.variadic ? p.name + "..." : p.name;
    if (!p.required && !p.default_text.empty()) text += " = " + p.default_text;
    else if (!p.required) text += "?";
    label.param(text);
  }
  SignatureHelp help = label.finish("", b.doc);
  // The parameter: by name, else positional (after the piped input), a variadic one taking the rest.
  int active = -1;
  for (size_t i = 0; i < b.params.size() && !arg.name.empty(); ++i)
    if (b.params[i].name == arg.name) active = static_cast<int>(i);
  if (active < 0 && arg.name.empty()) {
    size_t i = arg.positional_before + (piped ? 1 : 0);
    for (size_t k = 0; k < b.params.size() && k <= i; ++k)
      if (b.params[k].variadic) i = k;
    if (i < b.params.size()) active = static_cast<int>(i);
  }
  help.active_parameter = active;
  return help;
}

std::optional<SignatureHelp> for_decl(const Decl& d, const ArgumentAt& arg, bool piped) {
  LabelBuilder label(std::string(decl_kind_name(d.kind)) + " " + d.name);
  for (const Param& p : d.params) label.param(p.name + ": " + type_syntax_to_string(p.type));
  std::string result = d.result_type ? " -> " + type_syntax_to_string(*d.result_type) : "";
  SignatureHelp help = label.finish(result, d.doc);
  int active = -1;
  for (size_t i = 0; i < d.params.size() && !arg.name.empty(); ++i)
    if (d.params[i].name == arg.name) active = static_cast<int>(i);
  if (active < 0 && arg.name.empty() && arg.positional_before + (piped ? 1 : 0) < d.params.size())
    active = static_cast<int>(arg.positional_before + (piped ? 1 : 0));
  help.active_parameter = active;
  return help;
}

std::optional<SignatureHelp> for_call(const CallSite& site, const ArgumentAt& arg) {
  if (!site.call || !site.call->callee || site.call->callee->kind != ExprKind::Name) return std::nullopt;
  const auto* name = site.call->callee->as<NameExpr>();
  const Binding& b = name->target;
  if (b.kind == Binding::Builtin && b.builtin) return for_builtin(*b.builtin, arg, site.piped);
  if (b.kind == Binding::Global && b.decl && (b.decl->kind == DeclKind::Fn || b.decl->kind == DeclKind::Model))
    return for_decl(*b.decl, arg, site.piped);
  if (b.kind == Binding::Builtin && parse_dtype(name->name)) {
    LabelBuilder label(name->name);
    label.param("x");
    SignatureHelp help = label.finish("", "Converts x to " + name->name + " (numbers to numbers, bytes to bytes).");
    help.active_parameter = site.piped ? -1 : 0;
    return help;
  }
  return std::nullopt;
}

}  // namespace

std::optional<SignatureHelp> signature_help_at(const std::string& path, const std::string& text, uint32_t offset,
                                               const Program* current) {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text.size()));
  DeclLine decl = enclosing_decl_line(text, offset);
  // The innermost `(` open at the cursor.
  std::vector<uint32_t> open = open_bracket_positions(text, decl.begin, offset);
  while (!open.empty() && text[open.back()] != '(') open.pop_back();
  if (open.empty()) return std::nullopt;
  uint32_t paren = open.back();
  ArgumentAt arg = argument_at(text, paren, offset);
  if (current) {
    if (auto help = for_call(call_at(*current, paren), arg)) return help;
  }
  // The call is unfinished (or the buffer does not check): check a copy cut after the cursor with its
  // brackets closed, as completion does.
  std::string closers = closing_brackets(open_brackets(text, decl.begin, offset));
  std::string repaired = text.substr(0, offset) + closers + "\n" + text.substr(next_decl_line(text, offset));
  CheckOptions options;
  options.warnings = false;
  auto program = check_text(path, std::move(repaired), options);
  if (!program) return std::nullopt;
  return for_call(call_at(*program, paren), arg);
}

}  // namespace pipec::lsp

// A model used as a layer of another model (a block): `x | res_block`, `res_block(x)`, and
// `x | res_block(times = 6)`, the block applied six times in sequence. Every use has weights of its own.
#include <fmt/format.h>

#include "compiler/sema/checker.h"
#include "compiler/sema/promotion.h"

namespace pipec {

namespace {

// The block's output per example: its declared result type, else the type its body was checked to.
Type block_result(const Decl& model) {
  if (model.value && model.value->kind == ExprKind::Block) {
    const auto& body = *model.value->as<BlockExpr>();
    if (body.result) return body.result->type;
  }
  return Type::error();
}

}  // namespace

Type Checker::apply_block(const Decl& model, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range) {
  // Checking the block first (it may come later in the file) also reports a model that uses itself,
  // directly or through other blocks, as recursive_definition.
  Type declared = global_type(model, range);
  std::vector<std::pair<const Expr*, Type>> inputs;  // the piped value first, then positional arguments
  if (piped) inputs.push_back({piped, piped_type ? *piped_type : Type::error()});
  const Arg* times = nullptr;
  bool ok = !declared.is_error();
  if (call)
    for (Arg& a : call->args) {
      if (a.name.empty()) {
        inputs.push_back({a.value.get(), check(*a.value)});
        continue;
      }
      if (a.name == "times" && !times) {
        times = &a;
        check(*a.value);
        continue;
      }
      check(*a.value);
      auto& diag = diags().report(
          DiagKind::unknown_argument, a.name_range,
          fmt::format("a model used as a layer takes its inputs in order and `times`, not `{}`", a.name));
      diag.notes.push_back({model.name_range, "the model is declared here"});
      ok = false;
    }
  for (const auto& [expr, t] : inputs) ok = ok && !t.is_error();
  if (inputs.size() != model.params.size()) {
    auto& diag = diags().report(
        DiagKind::model_input_mismatch, call ? call->args_range : range,
        fmt::format("model `{}` takes {} input{}, but {} {} given", model.name, model.params.size(),
                    model.params.size() == 1 ? "" : "s", inputs.size(), inputs.size() == 1 ? "is" : "are"));
    diag.notes.push_back({model.name_range, "the model is declared here"});
    return Type::error();
  }
  if (!ok) return Type::error();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Type want = resolve_type(model.params[i].type);
    const Type& got = inputs[i].second;
    if (want.is_error()) return Type::error();
    if (!got.is_tensor() || got.dtype != want.dtype || fit_shape(want.shape, got.shape) != ShapeFit::Fits) {
      auto& diag = diags().report(DiagKind::model_input_mismatch, inputs[i].first->range,
                                  fmt::format("model input `{}` is {} but is given {}", model.params[i].name,
                                              type_to_string(want), type_to_string(got)));
      diag.notes.push_back({model.params[i].name_range, "the input is declared here"});
      ok = false;
    }
  }
  if (!ok) return Type::error();
  Type out = block_result(model);
  if (out.is_error()) return out;
  if (times) {
    const Expr& v = *times->value;
    if (!v.type.is_scalar() || !is_integer(v.type.dtype) || !v.constant) {
      diags().report(DiagKind::integer_expected, v.range, "`times` must be a constant integer");
      return Type::error();
    }
    if (v.constant->i < 1) {
      diags().report(DiagKind::invalid_argument_value, v.range, "`times` must be at least 1");
      return Type::error();
    }
    // Repeated, each output is the next use's input: one input, and an output of the same type.
    Type in = resolve_type(model.params[0].type);
    if (model.params.size() != 1 || out.dtype != in.dtype || out.shape != in.shape) {
      auto& diag = diags().report(
          DiagKind::block_repeat_mismatch, v.range,
          model.params.size() != 1 ? fmt::format("model `{}` takes {} inputs, so its output cannot feed its next use",
                                                 model.name, model.params.size())
                                   : fmt::format("model `{}` turns {} into {}, so its output cannot feed its next use",
                                                 model.name, type_to_string(in), type_to_string(out)));
      diag.notes.push_back({model.name_range, "the model is declared here"});
      diag.help = "a block repeated with `times` keeps the shape of its one input, like a residual block";
      return Type::error();
    }
  }
  return out;
}

}  // namespace pipec

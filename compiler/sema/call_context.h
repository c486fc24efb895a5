// What a builtin's type rule sees: its bound arguments and a way to report errors about them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/front/ast.h"
#include "compiler/front/diagnostics.h"
#include "compiler/sema/builtins.h"

namespace pipec {

class Checker;

/// One parameter's argument after binding.
struct BoundArg {
  bool present = false;
  Expr* expr = nullptr;        // null when absent, or for the piped input of `a | f`
  Type type;                   // checked type (not set for lambdas until the rule checks them)
  std::optional<Value> value;  // compile-time value when known
  std::string option;          // the bare option word, when the argument is one (`same`, `auto`)
  SourceRange range;
  std::vector<BoundArg> rest;  // variadic: every remaining positional argument
};

struct CallContext {
  Checker& checker;
  const Builtin& builtin;
  CallExpr* call = nullptr;    // null for a bare name in a pipe (`| relu`)
  SourceRange range;           // the whole call (or the piped name)
  std::vector<BoundArg> args;  // one per builtin.params entry
  const Decl* decl = nullptr;  // the source declaration, for sources (its schema)

  const BoundArg& arg(std::string_view name) const;
  BoundArg& arg(std::string_view name);
  bool has(std::string_view name) const { return arg(name).present; }

  Diagnostics& diags();
  Diagnostic& error(DiagKind kind, SourceRange r, std::string message);

  /// A required compile-time integer argument; reports not_constant / integer_expected and returns
  /// nullopt when it is not one. With `min`, values below it are reported as invalid_argument_value.
  std::optional<int64_t> const_int(std::string_view name, std::optional<int64_t> min = std::nullopt);
  std::optional<double> const_number(std::string_view name);
  std::optional<std::string> const_string(std::string_view name);
  std::optional<bool> const_bool(std::string_view name);
  /// A list of compile-time integers (shapes, indices).
  std::optional<std::vector<int64_t>> const_int_list(std::string_view name);
  /// The argument's tensor type; reports type_mismatch and returns nullopt for non-tensors.
  std::optional<Type> tensor(std::string_view name);
  /// The argument's dataset element; reports not_a_dataset when it is not a dataset.
  const ElementInfo* dataset(std::string_view name);
  /// Checks a lambda argument with the given parameter types and returns its body's type.
  Type lambda(std::string_view name, const std::vector<Type>& param_types);
  /// Checks flat_map's or interleave's function of one element, whose body is a dataset
  /// (Checker::check_dataset_lambda), and returns that body's type.
  Type dataset_lambda(std::string_view name, const Type& element);
  /// Whether argument `a` is a field of the element that a dataset function's head source takes per
  /// element (`text_lines(r.path)`): the const_* accessors accept it without a value.
  bool per_element(const BoundArg& a) const;
};

}  // namespace pipec

// Constant folding on compile-time Values (const declarations, literal arithmetic, stage arguments).
#pragma once

#include <optional>
#include <string>

#include "compiler/front/ast.h"
#include "runtime/plan/value.h"

namespace pipec {

enum class FoldError { None, DivisionByZero, Overflow, NotFoldable };

struct FoldResult {
  std::optional<Value> value;
  FoldError error = FoldError::None;
};

/// Folds `op v` to a value of dtype `result`.
FoldResult fold_unary(UnaryOp op, const Value& v, DType result);
/// Folds `a op b` to a value of dtype `result` (comparisons give Bool), after converting both operands
/// to `operands`, the dtype the run time computes in (binary_operand_dtype in promotion.h). Integer
/// overflow of i64 and division by zero are reported, not wrapped.
FoldResult fold_binary(BinaryOp op, const Value& a, const Value& b, DType operands, DType result);
/// Folds a scalar math function (abs, sign, tanh, exp, log, sqrt, min, max, ...) or a cast.
FoldResult fold_call(const std::string& name, const std::vector<Value>& args, DType result);

/// Converts a scalar value to `to` (truncating floats toward zero, like C casts).
Value convert_value(const Value& v, DType to);

}  // namespace pipec

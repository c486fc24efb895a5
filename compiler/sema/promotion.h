// Dtype promotion and shape broadcasting for element-wise ops. The rules are written down in
// docs/language.md ("Types and promotion"); tests/unit/promotion_test.cpp pins them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/front/ast.h"
#include "runtime/plan/type.h"

namespace pipec {

/// The dtype both operands of an arithmetic op are converted to, or nullopt when they do not mix
/// (bytes with anything). `a_weak`/`b_weak` mark untyped literals, which adopt the other side's dtype.
struct Promoted {
  DType dtype;
  bool weak;
};
std::optional<Promoted> promote(DType a, bool a_weak, DType b, bool b_weak);

/// numpy broadcasting: align trailing dimensions; each pair must be equal or one of them 1. Unknown
/// dimensions (-1) broadcast with anything and stay unknown unless the other side is known and not 1.
/// Returns nullopt when the shapes do not broadcast.
std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// How a value's shape fits a declared one (a fn parameter, a model input). A declared `?` accepts any
/// size; a known declared size needs that size, and a value whose size is unknown there is Ragged.
enum class ShapeFit { Fits, Mismatch, Ragged };
ShapeFit fit_shape(const std::vector<int64_t>& declared, const std::vector<int64_t>& got);

/// The dtype of `a / b` (true division): floats stay, integers divide as f32, f64 when either is 64-bit.
DType true_division_dtype(DType promoted);

/// The dtype both operands of `a op b` are converted to before `op` computes, given their promoted
/// dtype and the result's: the promoted one, except that true division computes in its float result
/// and arithmetic on bools in i64 (`(x > 0) + 5` adds 5, not true). Lowering's casts and constant
/// folding both follow it, so a folded constant is what the run time computes.
DType binary_operand_dtype(BinaryOp op, DType promoted, DType result);

}  // namespace pipec

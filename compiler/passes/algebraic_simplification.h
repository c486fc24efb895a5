// Expression pass `algebraic_simplification`: identities that hold bit for bit, so a float result never
// changes: x - 0, x * 1, x / 1 (floats and integers), x + 0, x | 0, x ^ 0, x << 0, x >> 0 and
// floordiv(x, 1) (integers only: -0.0 + 0.0 is +0.0), x and true, x or false, a cast or reshape to the
// type x already has, neg(neg x), bit_not(bit_not x), not(not x), reshape(reshape x). A rewrite is
// made only when the result has x's dtype and shape (a constant operand may not broadcast x).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool algebraic_simplification(Plan& plan);

}  // namespace pipec

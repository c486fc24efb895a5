// Expression pass `common_subexpression_elimination`: a later instruction with the same op, operands,
// attributes and type as an earlier one reuses the earlier value. Random ops are never merged (each
// call site is its own stream) and neither are parameters.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool common_subexpression_elimination(Plan& plan);

}  // namespace pipec

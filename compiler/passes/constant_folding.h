// Expression pass `constant_folding`: an instruction whose operands are all constants becomes a
// constant, computed at compile time by the interpreter's own kernel (so the value is bit for bit
// what the run would compute). Skips random ops, byte strings, results over 65,536 values and anything
// whose kernel fails on the constants (that error stays a run-time error with its location).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool constant_folding(Plan& plan);

}  // namespace pipec

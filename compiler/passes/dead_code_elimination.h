// Expression pass `dead_code_elimination`: removes instructions (parameters included) that no result of
// the function needs, and renumbers the rest.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `plan` in place; returns whether anything changed.
bool dead_code_elimination(Plan& plan);

}  // namespace pipec

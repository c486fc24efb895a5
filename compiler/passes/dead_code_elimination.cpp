#include "compiler/passes/dead_code_elimination.h"

#include "compiler/passes/function_edit.h"
#include "compiler/passes/plan_edit.h"

namespace pipec {

bool dead_code_elimination(Plan& plan) { return rewrite_functions(plan, remove_unused_instrs); }

}  // namespace pipec

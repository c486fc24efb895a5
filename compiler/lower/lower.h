// Lowering: a checked pipeline declaration (typed AST) -> a Plan (dataset graph + expression IR).
#pragma once

#include "runtime/plan/plan.h"
#include "compiler/sema/program.h"

namespace pipec {

/// Lowers `pipeline` (a Pipeline or Source declaration of a program checked without errors). Sources and
/// pipelines it refers to are inlined; fn calls in map bodies are inlined; implicit promotions become
/// explicit casts.
Plan lower_pipeline(const Program& program, const Decl& pipeline);

}  // namespace pipec

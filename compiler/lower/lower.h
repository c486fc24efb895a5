// Lowering: a checked pipeline declaration (typed AST) -> a Plan (dataset graph + expression IR).
#pragma once

#include <map>
#include <optional>

#include "compiler/sema/builtins.h"
#include "compiler/sema/program.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// Lowers `pipeline` (a Pipeline or Source declaration of a program checked without errors). Sources and
/// pipelines it refers to are inlined; fn calls in map bodies are inlined; implicit promotions become
/// explicit casts.
Plan lower_pipeline(const Program& program, const Decl& pipeline);
/// Lowers a dataset expression (a train block's `data` written inline) as the pipeline `name`.
Plan lower_dataset(const Program& program, const Expr& dataset, const std::string& name);

/// Lowers one expression of a model body into `fn` (used by compiler/train): each expression in
/// `leaves` is already a value of the model graph, bound to the `param` instruction given for it;
/// everything else (arithmetic, ops, fn calls, constants) is lowered as in a map body. Returns the id of
/// the result.
int lower_model_expression(const Program& program, ExprFunction& fn, const Expr& e,
                           const std::map<const Expr*, int>& leaves);

/// The IR op a call of builtin `b` (of kind Op) lowers to: the op of the same name (runtime/plan/ops.def);
/// nullopt when the table has none, which tests/unit/op_table_coverage_test.cpp reports.
std::optional<OpKind> op_of_builtin(const Builtin& b);

/// The stage kind a call of builtin `b` (a Source, Stage or Sink) lowers to: the stage of the same name.
std::optional<StageKind> stage_of_builtin(const Builtin& b);

}  // namespace pipec

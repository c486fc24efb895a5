// A checked train block -> a TrainProgram (runtime/model/train_program.h): the model lowered for the
// data's per-example shapes, the loss, the gradient pass and the optimizer step.
#pragma once

#include <optional>

#include "compiler/sema/program.h"
#include "runtime/model/train_program.h"

namespace pipec {

/// Compiles `train` (checked without errors). What the step graph cannot express (an op without a
/// gradient on the way to the parameters, random ops in a model) is reported to `diags`; nullopt then.
std::optional<TrainProgram> lower_train(const Program& program, const Decl& train, Diagnostics& diags);

/// The value of a train block's `data` entry (to lower the pipeline it names or writes inline).
const Expr* train_data_expr(const Decl& train);
/// The expression of the block's `validation` entry, or null.
const Expr* train_validation_expr(const Decl& train);

}  // namespace pipec

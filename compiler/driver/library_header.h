// The header `pipec build` writes next to a built library: the output fields as C macros and a table, or
// for a model library its inputs and output.
#pragma once

#include <string>

#include "runtime/model/model_graph.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// The text of libNAME.h for `plan`'s output element. `prefix` is the C identifier prefix (NAME
/// upper-cased for macros, as given for the table), `spec` the spec it came from (for the comment).
std::string library_header_text(const Plan& plan, const std::string& prefix, const std::string& spec);

/// The text of libNAME.h for a model library (`pipec build --train`): the request's inputs (the
/// served plan's source fields, one example's shape each) and the model's output, as C macros.
std::string model_header_text(const Plan& serving, const ModelGraph& g, const std::string& prefix,
                              const std::string& spec, const std::string& train_name);

/// A C identifier made of `name` (other characters become '_', a leading digit gets a '_').
std::string c_identifier(const std::string& name);

}  // namespace pipec

// Which pipeline of a spec a compilation works on (`pipec run`, `pipec build`, `explain --pipeline`).
#pragma once

#include <string>

#include "compiler/sema/program.h"

namespace pipec {

/// The pipeline called `name`; with no name, the only one, or the one the train block reads. Null
/// (with `error` saying why and listing the pipelines) when there is no such choice.
const Decl* pick_pipeline(const Program& p, const std::string& name, std::string& error);

}  // namespace pipec

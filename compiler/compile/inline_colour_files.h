// For a run: the class_dict.csv that a one_hot_colors names is read before the kernels are compiled,
// and its colours replace the path in the instruction, so the map lowers to a loop nest (the JIT and
// the CUDA kernels hold them as a table). The interpreter would read the same file when the op first
// runs, moments later, so a run computes what it would have; `pipec build` does not do this (a built
// library reads the file when it runs, as written).
#pragma once

#include <string>

#include "runtime/plan/plan.h"

namespace pipec {

/// Replaces each one_hot_colors' `colors = "file.csv"` (resolved against `data_dir`, the folder the
/// run resolves relative paths against) with the file's [r, g, b] rows. A file that cannot be read or
/// whose row count differs from the op's classes is left as it was: the run reports it in its own
/// words. Flat_maps' inner pipelines too. Returns how many instructions changed.
int inline_colour_files(Plan& plan, const std::string& data_dir);

}  // namespace pipec

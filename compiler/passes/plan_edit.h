// Editing helpers the plan passes share: who reads a stage, removing and inserting stages while the
// list stays topologically ordered, and the questions several passes ask before they move anything.
#pragma once

#include <functional>
#include <vector>

#include "runtime/plan/plan.h"

namespace pipec {

/// The stages that read `stage`.
std::vector<int> consumers(const Plan& plan, int stage);

/// Removes `stage` (which has exactly one input); whoever read it reads its input instead.
void erase_stage(Plan& plan, int stage);

/// Inserts `s` right after `stage`, reading it; whoever read `stage` reads `s` instead. Returns the
/// new stage's index (stage + 1).
int insert_stage_after(Plan& plan, int stage, Stage s);

/// True when an ignore_errors stage reads this stage's output, directly or further down: such stages
/// drop failing rows and renumber what follows, so passes leave them alone.
bool is_tolerant(const Plan& plan, int stage);

/// True when `pred` holds for `stage` or for any stage it reads from, transitively.
bool upstream_any(const Plan& plan, int stage, const std::function<bool(const Stage&)>& pred);

/// True when a stage at index `first` or later keys a random stream by its own index (shuffle, and
/// sources that shuffle their files): removing or inserting a stage before it would change its draws,
/// so the passes that do either refuse.
bool random_keys_from(const Plan& plan, int first);

/// True when the function draws random numbers (their keys include the element index).
bool has_random_ops(const ExprFunction& fn);

/// The stage a `batch(n)` with a constant n at `batch` reads, when that stage is an element map (a
/// function, no per_row, one input, no batch dimension) with no other reader and nothing
/// ignore_errors after it: what vectorize_map_after_batch and map_batch_fusion both start from.
/// -1 otherwise.
int map_before_batch(const Plan& plan, int batch);

/// True when every field is a tensor whose shape is fully known.
bool fixed_shapes(const std::vector<Field>& fields);

/// Gives every stage its own copy of its function, so edits do not reach plans that share them.
void clone_functions(Plan& plan);

/// Runs `rewrite` on the function of every map, filter and fused stage; true when any changed.
bool rewrite_functions(Plan& plan, const std::function<bool(ExprFunction&)>& rewrite);

}  // namespace pipec

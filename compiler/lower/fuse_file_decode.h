// decode_jpeg(read_file(p)) -> decode_jpeg(p) {path = true}: the decoder reads the file itself, so a
// corrupt image's error names the file, and the file's bytes are not copied into a string column.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites every decode_jpeg / decode_png / decode_image whose operand is a read_file used by nothing
/// else in every map/filter function of `plan`. Part of lowering (always on: error messages rely on
/// it), not an optional pass. Returns true when something changed.
bool fuse_file_decodes(Plan& plan);

/// Removes instruction `id` from `fn` (it must have no users) and renumbers the later ones.
void erase_instr(ExprFunction& fn, int id);

/// How many instructions and results use the value `id`.
int count_uses(const ExprFunction& fn, int id);

}  // namespace pipec

// Convert-normalize fusion (DALI's crop-mirror-normalize, the crop being the cropping decode's):
// `normalize(convert_image_dtype(x, f32), mean, std)` of u8 pixels, maybe flipped first, becomes one
// op that reads each u8 value once and writes its f32 result straight into the element's row of the
// stacked result. The unfused ops make three whole-image passes and a stacking copy; the fused op
// gives the same bits (runtime/image/convert_normalize.h).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// In every map, rewrites `normalize(c, mean, std)` where c = convert_image_dtype(x, f32) has no other
/// use, and a convert_image_dtype(x, f32) no normalize takes, of u8 pixels x [h, w, c] or [n, h, w, c],
/// into convert_normalize(x, mean, std) (or convert_normalize(x)). When x is flip_left_right,
/// flip_up_down or their random twins of a value y, used only there, the op reads y and flips it
/// itself (attribute `flip`; random_flip_convert_normalize with the flip's `op_id` and `seed`, so it
/// draws what the flip drew). Maps a back end could compile (no op, type or dtype in them that the
/// loop nests refuse) are left alone: the fused ops run in the interpreter only, and compiled code
/// beats both. Returns true when the plan changed. Pass name: "convert_normalize_fusion".
bool convert_normalize_fusion(Plan& plan);

}  // namespace pipec

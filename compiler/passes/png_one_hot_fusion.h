// PNG one-hot fusion: `one_hot_colors(decode_png(x))`, where the decoded label (after crop pushdown:
// its window, padded by crop_or_pad) has no other use, becomes one decode_png that turns each row into
// one f32 channel per class colour as libpng hands it out (runtime/image/png_window_decode.h). The u8
// label is never stored, the one-hot is written once (straight into the batch's rows when the map
// runs per row), and it equals one_hot_colors of the decoded label (tested).
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `one_hot_colors(d)` for d = decode_png(x) of u8 RGB pixels used only there: the decode
/// takes the colours (attribute `one_hot`, as one_hot_colors' `colors`) and the one-hot's result type,
/// and the one_hot_colors is removed. Returns true when the plan changed. Pass name:
/// "png_one_hot_fusion".
bool png_one_hot_fusion(Plan& plan);

}  // namespace pipec

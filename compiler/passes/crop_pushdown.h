// Crop pushdown: a crop right after decode_jpeg becomes a cropping decode, which asks libjpeg-turbo
// for the window only (jpeg_crop_scanline for the columns, jpeg_skip_scanlines for the rows above; the
// rows below are never decoded). The pixels are the ones decode-then-crop gives (tested), and a
// random window is drawn from the same Philox stream (the crop's op_id), so the result is identical.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `random_crop(decode_jpeg(x))` and `central_crop(decode_jpeg(x))` in every map function
/// when the decoded image has no other use: the decode takes the crop's attributes (`crop = random |
/// central`, height/width/op_id/seed or fraction) and its result type, and the crop is removed.
/// Returns true when the plan changed. Pass name: "crop_pushdown".
bool crop_pushdown(Plan& plan);

}  // namespace pipec

// Crop pushdown: a crop right after a decoder becomes a cropping decode. decode_jpeg asks
// libjpeg-turbo for the window only (jpeg_crop_scanline for the columns, jpeg_skip_scanlines for the
// rows above; the rows below are never decoded); decode_png stops after the window's last row and
// keeps only its columns (runtime/image/png_decoder.h), and also takes crop_or_pad (the window, then
// the padding). The pixels are the ones decode-then-crop gives (tested), and a random window is drawn
// from the same Philox stream (the crop's op_id), so the result is identical.
#pragma once

#include "runtime/plan/plan.h"

namespace pipec {

/// Rewrites `random_crop(d)` and `central_crop(d)` for d = decode_jpeg(x) or decode_png(x), and
/// `crop_or_pad(decode_png(x))`, in every map function when the decoded image has no other use: the
/// decode takes the crop's attributes (`crop = random | central | crop_or_pad`, height/width/op_id/seed
/// or fraction) and its result type, and the crop is removed.
/// Returns true when the plan changed. Pass name: "crop_pushdown".
bool crop_pushdown(Plan& plan);

}  // namespace pipec

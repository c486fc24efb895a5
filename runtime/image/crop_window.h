// The windows of the crop ops, shared by the crop kernels and by the cropping decoder (crop pushdown),
// so a crop pushed into decode_jpeg cuts exactly the window the separate crop would.
//
// Random choices (the contract the GPU and JIT kernels reproduce): an image op with op_id k, on element
// e of epoch p, draws from RandomStream(seed, k, e, p) (runtime/core/philox.h):
//   random_crop:  top = uniform_int(0, h - crop_h), then left = uniform_int(0, w - crop_w).
//   random_flip_*: one uniform_float() per image (one for an image, n in order for a batch of n);
//                  the image is flipped when the draw is < 0.5.
// The fields of a record share the op_id, so {blurred, sharp} get the same window and the same flip.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/philox.h"
#include "runtime/image/decode_options.h"

namespace pipec {

/// Why `window` does not lie in an h x w image ("" when it does).
std::string window_misfit(const CropWindow& window, int64_t h, int64_t w);

/// random_crop's window; throws ImageError when the crop is larger than the image.
CropWindow random_crop_window(int64_t h, int64_t w, int64_t crop_h, int64_t crop_w, RandomStream& stream);

/// tf.image.central_crop's window: start = int((d - d * fraction) / 2) on both axes (in f64).
CropWindow central_crop_window(int64_t h, int64_t w, double fraction);

/// The crop part of tf.image.resize_with_crop_or_pad: the centred window of min(h, th) x min(w, tw),
/// offsets max((d - t) / 2, 0) (floor division).
CropWindow crop_or_pad_window(int64_t h, int64_t w, int64_t th, int64_t tw);

}  // namespace pipec

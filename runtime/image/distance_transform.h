// The exact Euclidean distance transform of images: every pixel's distance to the nearest non-zero
// pixel of its channel (scipy.ndimage.distance_transform_edt of `image == 0`).
#pragma once

#include "runtime/core/tensor.h"

namespace pipec {

/// f32 distances, in pixels, for an image [h, w, c] or a batch [n, h, w, c] of any numeric dtype:
/// 0 on non-zero pixels, +inf everywhere in a channel with no non-zero pixel. Linear time (the lower
/// envelope of parabolas, Felzenszwalb and Huttenlocher), exact: squared distances are integers until
/// the final square root.
Tensor distance_transform_image(const Tensor& images);

}  // namespace pipec

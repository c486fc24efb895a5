// PNG and JPEG encoding (libpng, libjpeg-turbo): what encode_png / encode_jpeg do, so a spec can write
// image files (the examples make their sample data this way).
#pragma once

#include <string>

#include "runtime/core/tensor.h"
#include "runtime/image/decode_options.h"

namespace pipec {

/// u8 or u16 [h, w, c] with c in 1..4 -> PNG bytes (zlib level 6, no filtering heuristics beyond
/// libpng's default). Throws ImageError on other shapes or dtypes.
std::string encode_png_image(const Tensor& image);

/// u8 [h, w, 1 | 3] -> baseline JPEG bytes at `quality` (1..100), 4:2:0 chroma for RGB, as
/// tf.io.encode_jpeg's defaults. Throws ImageError on other shapes or dtypes.
std::string encode_jpeg_image(const Tensor& image, int quality);

}  // namespace pipec

// JPEG decoding with libjpeg-turbo, as tf.io.decode_jpeg does with default options (integer fast DCT,
// fancy upsampling), optionally decoding only a crop window (jpeg_crop_scanline / jpeg_skip_scanlines).
#pragma once

#include <string_view>

#include "runtime/core/tensor.h"
#include "runtime/image/decode_options.h"

namespace pipec {

/// Decodes `data` into u8[height, width, channels] (channels 0 gives 1 for grey files, 3 otherwise).
/// With options.window set, returns exactly the pixels of that window of the full decode. Throws
/// ImageError naming the reason (truncated data, corrupt header, too many pixels, CMYK).
Tensor decode_jpeg_image(std::string_view data, const DecodeOptions& options);

}  // namespace pipec

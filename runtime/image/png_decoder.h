// PNG decoding with libpng, as tf.io.decode_png does: any bit depth (1 to 16), palette, grey, alpha and
// tRNS, converted to the channels asked for, as u8 or u16.
#pragma once

#include <string_view>

#include "runtime/core/tensor.h"
#include "runtime/image/decode_options.h"

namespace pipec {

/// Decodes `data` into [height, width, channels] u8 (or u16 with options.u16). Conversions follow TF:
/// palette -> RGB (RGBA with tRNS when 4 channels or as stored), grey -> RGB by copying, RGB -> grey with
/// libpng's 0.299/0.587/0.114 weights, alpha dropped unless asked for, 16-bit -> 8-bit by libpng's
/// scaling, 8-bit -> 16-bit by * 257. Throws ImageError with libpng's reason.
Tensor decode_png_image(std::string_view data, const DecodeOptions& options);

}  // namespace pipec

// The PNG decodes the optimizer fuses with the ops after them (compiler/passes/crop_pushdown.h,
// png_one_hot_fusion.h): the window of a crop or of crop_or_pad, padded to crop_or_pad's size, and
// optionally turned into one_hot_colors' channels row by row as the rows come out of libpng, written
// straight into the caller's tensor (a row of the batch) when it gives one. The result equals the
// separate ops': decode, crop (or crop_or_pad), one_hot_colors.
#pragma once

#include <string_view>

#include "runtime/core/tensor.h"
#include "runtime/image/decode_options.h"
#include "runtime/image/transforms.h"

namespace pipec {

struct PngWindowOutput {
  /// crop_or_pad's size (> 0): the window (options.window, crop_or_pad_window's) is placed centred in
  /// zeros of this size, as tf.image.resize_with_crop_or_pad pads. 0: the window's own size.
  int64_t pad_height = 0, pad_width = 0;
  /// When set: one f32 channel per class colour instead of the (u8 RGB) pixels; the padding is the
  /// colour (0, 0, 0), as one_hot_colors sees the zeros crop_or_pad adds.
  const ColorClasses* one_hot = nullptr;
  /// When it has the result's dtype and shape: the result is written there (no copy) and returned.
  Tensor into;
};

/// Decodes `data`'s window (the whole image without options.window) into the output `out` describes.
/// Throws ImageError (bad data, a window that does not fit, one_hot on other than u8 RGB).
Tensor decode_png_window(std::string_view data, const DecodeOptions& options, const PngWindowOutput& out);

}  // namespace pipec

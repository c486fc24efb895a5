// PNG decoding with libpng, as tf.io.decode_png does: any bit depth (1 to 16), palette, grey, alpha and
// tRNS, converted to the channels asked for, as u8 or u16.
//
// The decode runs row by row and hands each row of the window to a PngRowSink: a whole-image decode
// is the window of the whole image. With options.window (crop pushdown) it stops after the window's
// last row and hands on only the window's columns; the rows above the window are still inflated and
// unfiltered (each row's filter reads the row above it), the rows below are not. The compressed data
// below the window is still walked chunk by chunk (lengths and CRCs, up to IEND), so a truncated or
// damaged file fails as the whole decode does; only a damaged deflate stream below the window goes
// unseen.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/core/tensor.h"
#include "runtime/image/decode_options.h"

namespace pipec {

/// Where a row-by-row PNG decode puts its rows.
class PngRowSink {
 public:
  virtual ~PngRowSink() = default;
  /// Once the header is read and the window chosen: the window (the whole image without a crop), the
  /// channels of each pixel and whether samples are u16 (else u8). May throw (ImageError, bad_alloc).
  virtual void start(const CropWindow& window, int channels, bool u16) = 0;
  /// Where the decoder may write window row `y` (0 = the window's top) directly: window.width *
  /// channels samples, only asked when the window spans every column and no widening is needed.
  /// nullptr: the decoder uses its own buffer and row() copies.
  virtual uint8_t* row_destination(int64_t) { return nullptr; }
  /// Window row `y` in order, top to bottom: window.width * channels samples (native-endian u16 when
  /// u16). `samples` may be the row_destination given for it. May throw.
  virtual void row(int64_t y, const uint8_t* samples) = 0;
};

/// Decodes `data` row by row into `sink` (see the file comment). Conversions follow TF:
/// palette -> RGB (RGBA with tRNS when 4 channels or as stored), grey -> RGB by copying, RGB -> grey with
/// libpng's 0.299/0.587/0.114 weights, alpha dropped unless asked for, 16-bit -> 8-bit by libpng's
/// scaling, 8-bit -> 16-bit by * 257. Throws ImageError with libpng's reason (or the sink's error).
void decode_png_rows(std::string_view data, const DecodeOptions& options, PngRowSink& sink);

/// Decodes `data` into [height, width, channels] u8 (or u16 with options.u16); with options.window,
/// [window height, window width, channels]: exactly decode-then-crop's pixels.
Tensor decode_png_image(std::string_view data, const DecodeOptions& options);

}  // namespace pipec

// A JPEG kept so that any window of it decodes without entropy-decoding the rest of the image.
//
// A baseline JPEG is one Huffman-coded bit stream in which each block's DC coefficient is coded as the
// difference from the previous block's: to decode a window, libjpeg-turbo (and tf.image.
// decode_and_crop_jpeg) must still entropy-decode every row above it, full width, which is most of the
// work for a 256x256 window of a 1280x720 photo. A restart marker resets that prediction and starts on
// a byte boundary, so a file with a restart marker after every MCU (minimum coded unit: 16x16 pixels
// for 4:2:0 colour, 8x8 for grey) can be cut: the MCUs covering a window, with their markers
// renumbered, under a copy of the header whose frame says the window's size, make a small valid JPEG.
//
// build() prepares a file for that, losslessly: baseline files directly (jpeg_restart_rewrite.h: the
// entropy-coded bits are copied, only the DC differences are coded again), others (progressive,
// arithmetic-coded) by libjpeg-turbo reading the quantized DCT coefficients and writing them back with
// restart_interval = 1 (then read by the direct rewrite). No pixel is decoded or re-quantized. The
// direct rewrite works lazily: a window's cut entropy-decodes the rows down to one MCU row below it
// that no window has needed before, and rewrites the MCUs it holds that no window has held before; so
// a file's first window costs less than a cropping decode of it (whose Huffman decode of the rows
// above computes every coefficient; the index's skips them, jpeg_huffman.h), and a later one a copy of
// its MCUs' bytes, plus the rows and MCUs it is the first to reach. Decoding the cut costs what the
// window's MCUs cost. The pixels are the ones a full decode gives: every block's coefficients are
// unchanged, and the cut keeps kWindowMarginPixels around the window, so chroma upsampling (which
// reads one chroma sample, two pixels, beyond each pixel) sees the same neighbours
// (tests/unit_runtime/jpeg_window_index_test.cpp checks every test JPEG and many windows).
//
// Damage in a baseline file's entropy-coded data is found when a cut first reaches the rows that hold
// it; from then on the index gives no window (decode_jpeg_window returns nothing) and the caller
// decodes the file the ordinary way, which recovers or reports the error as libjpeg does. The rows a
// cut reaches include the one below the window that libjpeg's cropping decode reads for upsampling,
// so a window is served from the index only where the ordinary decode would read no damage either.
//
// Once every MCU is rewritten the file is about as large as the original: +6% for the benchmark's
// 1280x720 4:2:0 photos (a 2-byte marker and padding per 16x16 MCU, the standard DC table), up to +40%
// for small grey files, whose MCU is one 8x8 block; Exif blocks and comments are dropped. Until then
// the index also holds the file's entropy-coded bytes, to rewrite the MCUs still to come.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/image/decode_options.h"
#include "runtime/image/jpeg_restart_rewrite.h"

namespace pipec {

class JpegWindowIndex {
 public:
  /// Pixels kept around a window in a cut (then rounded out to whole MCUs).
  static constexpr int64_t kWindowMarginPixels = 4;

  /// The index of `jpeg`, or nullptr with the reason in `why` when the file is not one libjpeg-turbo
  /// reads without complaint (a truncated scan, damaged markers or, for files libjpeg transcodes,
  /// corrupt data anywhere, even data libjpeg would recover from), has more than `max_pixels` pixels,
  /// or is CMYK. Such files are decoded the ordinary way, which reports the error (or, for a file
  /// truncated below a window, still gives the window).
  static std::shared_ptr<const JpegWindowIndex> build(std::string_view jpeg, int64_t max_pixels,
                                                      std::string* why = nullptr);

  int64_t height() const { return file_.height(); }
  int64_t width() const { return file_.width(); }
  /// About the bytes this index will hold once every MCU is rewritten (what a memory budget counts).
  size_t memory_bytes() const;
  /// The bytes it holds now.
  size_t held_bytes() const;
  /// MCUs entropy-decoded and rewritten so far, of mcus().
  int64_t scanned_mcus() const;
  int64_t rewritten_mcus() const;
  int64_t mcus() const { return file_.mcus(); }
  /// Whether build() took the fast path (jpeg_restart_rewrite.h) rather than libjpeg's transcoder.
  bool rewritten_directly() const { return direct_; }

  /// A JPEG of the MCUs that cover `window` (which must lie in the image) plus the margin, into `out`;
  /// `inside` is where the window lies in it. False when the rows it needs hold damaged data (then
  /// every later cut is refused too).
  bool cut(const CropWindow& window, CropWindow& inside, std::string& out) const;

 private:
  JpegWindowIndex() = default;

  // Cuts of one file may run on several threads at once; the rewriter's lazy work is done under
  // this lock (the cut's decode is not).
  mutable std::mutex mu_;
  mutable RestartRewriter file_;
  mutable bool damaged_ = false;
  bool direct_ = false;
};

/// What decode_jpeg_image(original, options) gives for options.window, decoded from the index: the
/// window callback is asked once, with the image's size. Throws ImageError as the decoder does;
/// returns nothing when the index holds damaged data where this window needs it: the caller then
/// decodes the original, for the window the callback gave, which `asked` receives.
std::optional<Tensor> decode_jpeg_window(const JpegWindowIndex& index, const DecodeOptions& options,
                                         CropWindow* asked = nullptr);

}  // namespace pipec

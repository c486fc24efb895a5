// What the image decoders are asked for, and how they fail.
//
// Both decoders follow TensorFlow's tf.io.decode_png / tf.io.decode_jpeg with default options, so the
// pixels equal TF's (tests/conformance/fixtures/images pins that). They refuse an image whose header
// announces more than `max_pixels` pixels before allocating or decoding anything, so a 20-byte file
// that claims to be 65535 x 65535 cannot make the process allocate 12 GiB.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace pipec {

/// The default pixel limit: 2^28 pixels (16384 x 16384), 768 MiB as RGB u8.
constexpr int64_t kDefaultMaxPixels = int64_t{1} << 28;

/// A window of rows [top, top + height) and columns [left, left + width).
struct CropWindow {
  int64_t top = 0, left = 0, height = 0, width = 0;
};

/// Picks the window once the decoder knows the image's height and width (crop pushdown: the random or
/// central window depends on the size). Returns false and sets `error` when the window does not fit.
using WindowFn = std::function<bool(int64_t height, int64_t width, CropWindow& window, std::string& error)>;

struct DecodeOptions {
  int channels = 3;  // 0: as stored; 1 grey; 3 RGB; 4 RGBA (PNG only)
  bool u16 = false;  // PNG only: 16-bit samples (8-bit files are scaled by 257, as TF does)
  int64_t max_pixels = kDefaultMaxPixels;
  WindowFn window;  // when set, only this window is decoded (and returned)
};

/// The error for an image of h x w pixels when the limit is `max_pixels`.
inline std::string pixel_limit_error(int64_t h, int64_t w, int64_t max_pixels) {
  return fmt::format("{} x {} = {} pixels is more than max_pixels = {}", w, h, h * w, max_pixels);
}

/// A file that is not a decodable image: the message says why ("truncated: the data ends in the middle
/// of the image", "IHDR: CRC error", "4000 x 3000 = 12000000 pixels is more than max_pixels = 1000000").
class ImageError : public std::runtime_error {
 public:
  explicit ImageError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace pipec

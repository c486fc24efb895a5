// libFuzzer target for the image decoders: arbitrary bytes through decode_png and decode_jpeg with
// every channel count, u8 and u16, a small pixel limit (so the fuzzer cannot ask for gigabytes), and a
// crop window picked from the input's last bytes (the cropping JPEG decode of crop pushdown), and the
// JPEG window index (repeated_jpeg_index): building one, and decoding that window from it, which must
// give the cropping decode's pixels.
//
// The contract: bad bytes give an ImageError, never a crash, a leak (longjmp out of libjpeg/libpng
// must free everything), a hang, or a result whose shape disagrees with what was asked.
//
// Build and run with tests/fuzz/run_images.sh.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/jpeg_window_index.h"
#include "runtime/image/png_decoder.h"
#include "tests/fuzz/fuzz_window.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pipec;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const uint8_t pick = size ? data[size - 1] : 0;
  for (int ch : {0, 1, 3, 4}) {
    DecodeOptions o;
    o.channels = ch;
    o.u16 = (pick & 1) != 0;
    o.max_pixels = 1 << 20;
    try {
      Tensor t = decode_png_image(bytes, o);
      if (t.rank() != 3 || (ch != 0 && t.shape()[2] != ch)) __builtin_trap();
    } catch (const ImageError&) {
    }
    if (ch == 4) continue;
    o.u16 = false;
    try {
      Tensor t = decode_jpeg_image(bytes, o);
      if (t.rank() != 3 || (ch != 0 && t.shape()[2] != ch)) __builtin_trap();
    } catch (const ImageError&) {
    }
    o.window = [pick](int64_t h, int64_t w, CropWindow& win, std::string&) {
      win = fuzz_window(pick, h, w);
      return true;
    };
    bool cropped = false;
    Tensor crop;
    try {
      crop = decode_jpeg_image(bytes, o);
      if (crop.rank() != 3) __builtin_trap();
      cropped = true;
    } catch (const ImageError&) {
    }
    if (ch != 3) continue;
    // Decoding from the index agrees with the cropping decode: the same pixels, or both fail.
    if (auto index = JpegWindowIndex::build(bytes, o.max_pixels)) {
      try {
        // Damage where the window lies: the decode op falls back to the ordinary decode, as here.
        std::optional<Tensor> got = decode_jpeg_window(*index, o);
        Tensor from_index = got ? std::move(*got) : decode_jpeg_image(bytes, o);
        if (!cropped || !from_index.equals(crop)) __builtin_trap();
      } catch (const ImageError&) {
        if (cropped) __builtin_trap();
      }
    }
  }
  return 0;
}

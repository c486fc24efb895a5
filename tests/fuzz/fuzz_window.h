// The crop window the image fuzzer (fuzz_images.cpp) derives from an input's last byte, shared with the
// unit test that replays its findings (tests/unit_runtime/jpeg_window_index_test.cpp) so a replay asks
// for the same window.
#pragma once

#include <cstdint>

#include "runtime/image/decode_options.h"

namespace pipec {

inline CropWindow fuzz_window(int pick, int64_t h, int64_t w) {
  CropWindow win;
  win.height = 1 + (pick % 7) % h;
  win.width = 1 + (pick % 5) % w;
  win.top = (pick / 7) % (h - win.height + 1);
  win.left = (pick / 5) % (w - win.width + 1);
  return win;
}

}  // namespace pipec

#include "runtime/image/crop_window.h"

#include <algorithm>

#include <fmt/format.h>

namespace pipec {

std::string window_misfit(const CropWindow& win, int64_t h, int64_t w) {
  if (win.top >= 0 && win.left >= 0 && win.height >= 1 && win.width >= 1 && win.top + win.height <= h &&
      win.left + win.width <= w)
    return "";
  return fmt::format("the crop window {}x{} at ({}, {}) does not fit the {}x{} image", win.height, win.width, win.top,
                     win.left, h, w);
}

CropWindow random_crop_window(int64_t h, int64_t w, int64_t crop_h, int64_t crop_w, RandomStream& stream) {
  if (crop_h > h || crop_w > w)
    throw ImageError(fmt::format("a {}x{} crop does not fit the {}x{} image", crop_h, crop_w, h, w));
  CropWindow win;
  win.height = crop_h;
  win.width = crop_w;
  win.top = stream.uniform_int(0, h - crop_h);
  win.left = stream.uniform_int(0, w - crop_w);
  return win;
}

CropWindow central_crop_window(int64_t h, int64_t w, double fraction) {
  auto start = [&](int64_t d) {
    return static_cast<int64_t>((static_cast<double>(d) - static_cast<double>(d) * fraction) / 2);
  };
  CropWindow win;
  win.top = start(h);
  win.left = start(w);
  win.height = h - 2 * win.top;
  win.width = w - 2 * win.left;
  return win;
}

CropWindow crop_or_pad_window(int64_t h, int64_t w, int64_t th, int64_t tw) {
  auto offset = [](int64_t d, int64_t t) { return std::max<int64_t>((d - t) / 2, 0); };  // d > t: floor == trunc
  CropWindow win;
  win.top = offset(h, th);
  win.left = offset(w, tw);
  win.height = std::min(h, th);
  win.width = std::min(w, tw);
  return win;
}

}  // namespace pipec

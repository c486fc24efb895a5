#include "runtime/train/dnnl/reached_region.h"

#include <algorithm>

namespace pipec::train {

void ImageCorner::take(const float* full, float* part) const {
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t y = 0; y < part_h; ++y) {
      const float* from = full + ((n * height + y) * width) * channels;
      std::copy(from, from + part_w * channels, part + ((n * part_h + y) * part_w) * channels);
    }
}

void ImageCorner::put(const float* part, float* full, const std::function<float(int64_t)>& rest) const {
  std::vector<float> fill(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) fill[static_cast<size_t>(c)] = rest(c);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        float* to = full + ((n * height + y) * width + x) * channels;
        if (y < part_h && x < part_w) {
          const float* from = part + ((n * part_h + y) * part_w + x) * channels;
          std::copy(from, from + channels, to);
        } else {
          std::copy(fill.begin(), fill.end(), to);
        }
      }
}

void ImageCorner::add_outside(const float* full, std::vector<double>& sums) const {
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        if (y < part_h && x < part_w) continue;
        const float* from = full + ((n * height + y) * width + x) * channels;
        for (int64_t c = 0; c < channels; ++c) sums[static_cast<size_t>(c)] += from[c];
      }
}

int64_t reached_rows(int64_t in, int64_t out, int64_t stride, int64_t window, int64_t pad_before) {
  return std::min(in, (out - 1) * stride + window - pad_before);
}

}  // namespace pipec::train

#include "runtime/image/convert_normalize.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/image/decode_options.h"

namespace pipec {

namespace {

// The values of one row, laid out as normalize_image lays out an image: the channel pattern repeated
// over a block of 16 pixels, so the loop over a block has no channel arithmetic and vectorizes. Each
// value is convert_image_dtype's (f32(x) * f32(1 / 255), rounded) and then normalize's ((v - mean) /
// std, each rounded): the same operations in the same order, no contraction (runtime/CMakeLists.txt).
template <bool kNormalize>
void convert_values(const uint8_t* src, float* dst, int64_t n, float scale, const float* mb, const float* sb,
                    int64_t block) {
  int64_t i = 0;
  for (; i + block <= n; i += block)
    for (int64_t j = 0; j < block; ++j) {
      const float v = static_cast<float>(src[i + j]) * scale;
      dst[i + j] = kNormalize ? (v - mb[j]) / sb[j] : v;
    }
  for (int64_t j = 0; i < n; ++i, ++j) {
    const float v = static_cast<float>(src[i]) * scale;
    dst[i] = kNormalize ? (v - mb[j]) / sb[j] : v;
  }
}

// Row `src` of w pixels of `pixel` bytes with its pixels in reverse order, into `dst` (a small buffer
// that stays in cache). The image is read forwards: read backwards, 3 bytes at a time, its loads
// missed the cache (half of this function's time on seed 003's images).
void reverse_pixels(const uint8_t* src, uint8_t* dst, int64_t w, int64_t pixel) {
  if (pixel == 3) {
    for (int64_t x = 0; x < w; ++x) std::memcpy(dst + (w - 1 - x) * 3, src + x * 3, 3);
    return;
  }
  for (int64_t x = 0; x < w; ++x) std::memcpy(dst + (w - 1 - x) * pixel, src + x * pixel, static_cast<size_t>(pixel));
}

// normalize_image's check: one value, or one per channel.
std::vector<float> per_channel(const std::vector<float>& v, int64_t c, const char* what) {
  if (v.size() == 1) return std::vector<float>(static_cast<size_t>(c), v[0]);
  if (static_cast<int64_t>(v.size()) != c)
    throw ImageError(fmt::format("{} has {} values but the image has {} channels", what, v.size(), c));
  return v;
}

}  // namespace

Tensor convert_normalize_image(const Tensor& images, const ConvertNormalizeOptions& o) {
  const Shape& s = images.shape();
  if (images.rank() != 3 && images.rank() != 4)
    throw ImageError(
        fmt::format("expected an image [h, w, c] or a batch [n, h, w, c], got shape {}", shape_to_string(s)));
  if (images.dtype() != DType::U8)
    throw ImageError(fmt::format("expected u8 pixels, got {}", dtype_name(images.dtype())));
  const bool batch = images.rank() == 4;
  const int64_t n = batch ? s[0] : 1, h = s[batch ? 1 : 0], w = s[batch ? 2 : 1], c = s[batch ? 3 : 2];
  if (!o.flip.empty() && static_cast<int64_t>(o.flip.size()) != n)
    throw ImageError("internal: one flip choice per image expected");
  if ((o.mean == nullptr) != (o.std == nullptr)) throw ImageError("internal: normalize needs both mean and std");
  const int64_t cc = std::max<int64_t>(c, 1), block = cc * 16;
  std::vector<float> mb(static_cast<size_t>(block)), sb(static_cast<size_t>(block));
  if (o.mean) {
    const std::vector<float> m = per_channel(*o.mean, c, "mean"), sd = per_channel(*o.std, c, "std");
    for (int64_t j = 0; j < block && c > 0; ++j) {
      mb[static_cast<size_t>(j)] = m[static_cast<size_t>(j % c)];
      sb[static_cast<size_t>(j)] = sd[static_cast<size_t>(j % c)];
    }
  }
  // convert_image_dtype's scale for u8 -> f32: 1 / 255 computed in f64, rounded to f32.
  const float scale = static_cast<float>(1.0 / 255.0);
  const bool fits = o.into.dtype() == DType::F32 && o.into.shape() == s;
  Tensor out = fits ? o.into : Tensor::empty(DType::F32, s);
  const int64_t row_values = w * c;
  std::vector<uint8_t> mirrored(static_cast<size_t>(row_values));
  const uint8_t* src = images.raw();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const bool flips = !o.flip.empty() && o.flip[static_cast<size_t>(i)];
    const bool mirror = flips && o.horizontal, upside_down = flips && !o.horizontal;
    for (int64_t y = 0; y < h; ++y) {
      const uint8_t* row = src + (i * h + (upside_down ? h - 1 - y : y)) * row_values;
      if (mirror) {
        reverse_pixels(row, mirrored.data(), w, c);
        row = mirrored.data();
      }
      float* to = dst + (i * h + y) * row_values;
      if (o.mean) convert_values<true>(row, to, row_values, scale, mb.data(), sb.data(), block);
      else convert_values<false>(row, to, row_values, scale, mb.data(), sb.data(), block);
    }
  }
  return out;
}

}  // namespace pipec

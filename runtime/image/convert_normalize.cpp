#include "runtime/image/convert_normalize.h"

#include <fmt/format.h>

#include "runtime/image/decode_options.h"
#include "runtime/image/transforms.h"

namespace pipec {

namespace {

// table[v * c + k]: what convert (and normalize) make of the value v in channel k, computed by the
// unfused functions on an image holding every value once in every channel.
std::vector<float> value_table(int64_t c, const ConvertNormalizeOptions& o) {
  Tensor ramp = Tensor::empty(DType::U8, {1, 256, c});
  for (int64_t v = 0; v < 256; ++v)
    for (int64_t k = 0; k < c; ++k) ramp.raw()[v * c + k] = static_cast<uint8_t>(v);
  Tensor f = convert_image_dtype(ramp, DType::F32);
  if (o.mean) f = normalize_image(f, *o.mean, *o.std);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.num_elements());
}

// One row of w pixels, read from the right end when `mirror`. The channel count is a template constant
// for the common ones (0: `c` at run time), so the inner loop is straight lookups.
template <int kC>
void row(const uint8_t* src, float* dst, int64_t w, int64_t c, bool mirror, const float* table) {
  const int64_t cc = kC > 0 ? kC : c;
  for (int64_t x = 0; x < w; ++x) {
    const uint8_t* p = src + (mirror ? w - 1 - x : x) * cc;
    float* q = dst + x * cc;
    for (int64_t k = 0; k < cc; ++k) q[k] = table[p[k] * cc + k];
  }
}

using RowFn = void (*)(const uint8_t*, float*, int64_t, int64_t, bool, const float*);

RowFn row_for(int64_t c) {
  switch (c) {
    case 1: return row<1>;
    case 3: return row<3>;
    case 4: return row<4>;
    default: return row<0>;
  }
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
  const std::vector<float> table = value_table(c, o);
  const bool fits = o.into.dtype() == DType::F32 && o.into.shape() == s;
  Tensor out = fits ? o.into : Tensor::empty(DType::F32, s);
  const RowFn fn = row_for(c);
  const int64_t row_values = w * c;
  const uint8_t* src = images.raw();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const bool flips = !o.flip.empty() && o.flip[static_cast<size_t>(i)];
    const bool mirror = flips && o.horizontal, upside_down = flips && !o.horizontal;
    for (int64_t y = 0; y < h; ++y) {
      const int64_t from = upside_down ? h - 1 - y : y;
      fn(src + (i * h + from) * row_values, dst + (i * h + y) * row_values, w, c, mirror, table.data());
    }
  }
  return out;
}

}  // namespace pipec

#include "runtime/image/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"

namespace pipec {

namespace {

// An image or a batch seen as n images of h x w pixels of `pixel` bytes each.
struct Geometry {
  int64_t n = 1, h = 0, w = 0, c = 0;
  size_t pixel = 0;  // bytes per pixel (c * element size)
  bool batch = false;
};

Geometry geometry(const Tensor& t) {
  const Shape& s = t.shape();
  if (t.rank() != 3 && t.rank() != 4)
    throw ImageError(
        fmt::format("expected an image [h, w, c] or a batch [n, h, w, c], got shape {}", shape_to_string(s)));
  if (t.dtype() == DType::Bytes) throw ImageError("expected pixels, got byte strings (decode the image first)");
  Geometry g;
  g.batch = t.rank() == 4;
  size_t k = g.batch ? 1 : 0;
  g.n = g.batch ? s[0] : 1;
  g.h = s[k];
  g.w = s[k + 1];
  g.c = s[k + 2];
  g.pixel = static_cast<size_t>(g.c) * dtype_size(t.dtype());
  return g;
}

Shape shape_of(const Geometry& g, int64_t h, int64_t w, int64_t c) {
  if (g.batch) return {g.n, h, w, c};
  return {h, w, c};
}

}  // namespace

Tensor crop_image(const Tensor& images, const CropWindow& win) {
  Geometry g = geometry(images);
  if (win.top < 0 || win.left < 0 || win.top + win.height > g.h || win.left + win.width > g.w || win.height < 0 ||
      win.width < 0)
    throw ImageError(fmt::format("the {}x{} window at ({}, {}) does not fit the {}x{} image", win.height, win.width,
                                 win.top, win.left, g.h, g.w));
  Tensor out = Tensor::empty(images.dtype(), shape_of(g, win.height, win.width, g.c));
  const uint8_t* src = images.raw();
  uint8_t* dst = out.raw();
  const size_t row = static_cast<size_t>(win.width) * g.pixel;
  for (int64_t i = 0; i < g.n; ++i)
    for (int64_t y = 0; y < win.height; ++y) {
      const uint8_t* s = src + ((static_cast<size_t>(i * g.h + win.top + y) * g.w + win.left) * g.pixel);
      std::memcpy(dst, s, row);
      dst += row;
    }
  return out;
}

Tensor crop_or_pad_image(const Tensor& images, int64_t th, int64_t tw) {
  Geometry g = geometry(images);
  auto pad_offset = [](int64_t d, int64_t t) { return t > d ? (t - d) / 2 : 0; };
  CropWindow win;
  win.top = g.h > th ? (g.h - th) / 2 : 0;
  win.left = g.w > tw ? (g.w - tw) / 2 : 0;
  win.height = std::min(g.h, th);
  win.width = std::min(g.w, tw);
  Tensor cropped = crop_image(images, win);
  if (win.height == th && win.width == tw) return cropped;
  const int64_t py = pad_offset(g.h, th), px = pad_offset(g.w, tw);
  Tensor out = Tensor::zeros(images.dtype(), shape_of(g, th, tw, g.c));
  const size_t row = static_cast<size_t>(win.width) * g.pixel;
  for (int64_t i = 0; i < g.n; ++i)
    for (int64_t y = 0; y < win.height; ++y)
      std::memcpy(out.raw() + (static_cast<size_t>((i * th + py + y) * tw + px) * g.pixel),
                  cropped.raw() + static_cast<size_t>(i * win.height + y) * row, row);
  return out;
}

namespace {

// Row `src` with its pixels in reverse order. The pixel size is a template constant for the common
// sizes, so each pixel is a register move rather than a call to memcpy.
template <size_t kPixel>
void reverse_pixels(const uint8_t* src, uint8_t* dst, int64_t w) {
  for (int64_t x = 0; x < w; ++x)
    std::memcpy(dst + static_cast<size_t>(x) * kPixel, src + static_cast<size_t>(w - 1 - x) * kPixel, kPixel);
}

void reverse_pixels(const uint8_t* src, uint8_t* dst, int64_t w, size_t pixel) {
  switch (pixel) {
    case 1: return reverse_pixels<1>(src, dst, w);
    case 2: return reverse_pixels<2>(src, dst, w);
    case 3: return reverse_pixels<3>(src, dst, w);
    case 4: return reverse_pixels<4>(src, dst, w);
    case 6: return reverse_pixels<6>(src, dst, w);
    case 8: return reverse_pixels<8>(src, dst, w);
    case 12: return reverse_pixels<12>(src, dst, w);
    case 16: return reverse_pixels<16>(src, dst, w);
    default:
      for (int64_t x = 0; x < w; ++x)
        std::memcpy(dst + static_cast<size_t>(x) * pixel, src + static_cast<size_t>(w - 1 - x) * pixel, pixel);
  }
}

}  // namespace

Tensor flip_image(const Tensor& images, bool horizontal, const std::vector<bool>& flip) {
  Geometry g = geometry(images);
  if (static_cast<int64_t>(flip.size()) != g.n) throw ImageError("internal: one flip choice per image expected");
  // Tensors are values nobody writes to once made: when no image flips, the input is the result.
  if (std::none_of(flip.begin(), flip.end(), [](bool f) { return f; })) return images;
  Tensor out = Tensor::empty(images.dtype(), images.shape());
  const size_t row = static_cast<size_t>(g.w) * g.pixel, img = row * static_cast<size_t>(g.h);
  for (int64_t i = 0; i < g.n; ++i) {
    const uint8_t* src = images.raw() + static_cast<size_t>(i) * img;
    uint8_t* dst = out.raw() + static_cast<size_t>(i) * img;
    if (!flip[static_cast<size_t>(i)]) {
      std::memcpy(dst, src, img);
    } else if (!horizontal) {
      for (int64_t y = 0; y < g.h; ++y)
        std::memcpy(dst + static_cast<size_t>(y) * row, src + static_cast<size_t>(g.h - 1 - y) * row, row);
    } else {
      for (int64_t y = 0; y < g.h; ++y)
        reverse_pixels(src + static_cast<size_t>(y) * row, dst + static_cast<size_t>(y) * row, g.w, g.pixel);
    }
  }
  return out;
}

namespace {

struct Interp {
  int64_t lo, hi;
  float lerp;
};

// TF's compute_interpolation_weights with HalfPixelScaler, in f32.
std::vector<Interp> bilinear_weights(int64_t out, int64_t in) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<Interp> r(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float v = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float f = std::floor(v);
    r[i].lo = std::max<int64_t>(static_cast<int64_t>(f), 0);
    r[i].hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(v)), in - 1);
    r[i].lerp = v - f;
  }
  return r;
}

}  // namespace

Tensor resize_image(const Tensor& images, int64_t th, int64_t tw, bool nearest) {
  Geometry g = geometry(images);
  if (g.h < 1 || g.w < 1) throw ImageError(fmt::format("cannot resize an empty {}x{} image", g.h, g.w));
  if (nearest) {
    const float sy = static_cast<float>(g.h) / static_cast<float>(th),
                sx = static_cast<float>(g.w) / static_cast<float>(tw);
    Tensor out = Tensor::empty(images.dtype(), shape_of(g, th, tw, g.c));
    std::vector<int64_t> xs(static_cast<size_t>(tw));
    for (int64_t x = 0; x < tw; ++x)
      xs[x] = std::min<int64_t>(static_cast<int64_t>(std::floor((static_cast<float>(x) + 0.5f) * sx)), g.w - 1);
    uint8_t* dst = out.raw();
    for (int64_t i = 0; i < g.n; ++i)
      for (int64_t y = 0; y < th; ++y) {
        int64_t yy = std::min<int64_t>(static_cast<int64_t>(std::floor((static_cast<float>(y) + 0.5f) * sy)), g.h - 1);
        const uint8_t* srow = images.raw() + static_cast<size_t>((i * g.h + yy) * g.w) * g.pixel;
        for (int64_t x = 0; x < tw; ++x, dst += g.pixel)
          std::memcpy(dst, srow + static_cast<size_t>(xs[x]) * g.pixel, g.pixel);
      }
    return out;
  }
  Tensor out = Tensor::empty(DType::F32, shape_of(g, th, tw, g.c));
  const auto ys = bilinear_weights(th, g.h), xs = bilinear_weights(tw, g.w);
  visit_numeric(images.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = images.data<T>();
    float* o = out.data<float>();
    auto at = [&](int64_t i, int64_t y, int64_t x, int64_t c) {
      return static_cast<float>(load(src[((i * g.h + y) * g.w + x) * g.c + c]));
    };
    for (int64_t i = 0; i < g.n; ++i)
      for (int64_t y = 0; y < th; ++y)
        for (int64_t x = 0; x < tw; ++x)
          for (int64_t c = 0; c < g.c; ++c) {
            const Interp& Y = ys[y];
            const Interp& X = xs[x];
            float tl = at(i, Y.lo, X.lo, c), tr = at(i, Y.lo, X.hi, c), bl = at(i, Y.hi, X.lo, c),
                  br = at(i, Y.hi, X.hi, c);
            float top = tl + (tr - tl) * X.lerp;
            float bottom = bl + (br - bl) * X.lerp;
            *o++ = top + (bottom - top) * Y.lerp;
          }
  });
  return out;
}

namespace {

template <class T>
double max_of() {
  return static_cast<double>(std::numeric_limits<T>::max());
}

// One (source, destination) dtype pair of convert_image_dtype. A function template rather than code in
// the nested generic lambdas of the dtype dispatch: clang instantiates discarded `if constexpr` branches
// there (the fuzz build uses clang).
template <class S, class D>
void convert_pixels(const S* src, D* dst, int64_t n) {
  if constexpr (is_int_v<S> && is_float_v<D>) {
    // TF: cast, then multiply by 1 / max computed in f64 and rounded to the float type.
    using C = compute_t<D>;
    const C scale = static_cast<C>(1.0 / max_of<S>());
    for (int64_t i = 0; i < n; ++i) dst[i] = store<D>(static_cast<C>(static_cast<C>(src[i]) * scale));
  } else if constexpr (is_float_v<S> && is_int_v<D>) {
    using C = compute_t<S>;
    const C scale = static_cast<C>(max_of<D>() + 0.5);
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_int<D>(static_cast<C>(load(src[i]) * scale));
  } else if constexpr (is_int_v<S> && is_int_v<D>) {
    // Unsigned and signed ranges as TF: to a larger maximum multiplies, to a smaller (or equal) one
    // floor-divides; comparing maxima, not sizes, keeps i8 -> u8 a multiply by 2 (not a divide by 0).
    if constexpr (static_cast<uint64_t>(std::numeric_limits<D>::max()) >
                  static_cast<uint64_t>(std::numeric_limits<S>::max())) {
      using W = unsigned __int128;  // max + 1 of a 64-bit type does not fit in 64 bits
      const auto k =
          static_cast<uint64_t>((W(std::numeric_limits<D>::max()) + 1) / (W(std::numeric_limits<S>::max()) + 1));
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(static_cast<D>(src[i]) * static_cast<D>(k));
    } else {
      using W = unsigned __int128;
      const auto k =
          static_cast<uint64_t>((W(std::numeric_limits<S>::max()) + 1) / (W(std::numeric_limits<D>::max()) + 1));
      for (int64_t i = 0; i < n; ++i) {
        S q = static_cast<S>(src[i] / static_cast<S>(k));
        if (src[i] < 0 && src[i] % static_cast<S>(k) != 0) q = static_cast<S>(q - 1);  // floor division
        dst[i] = static_cast<D>(q);
      }
    }
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(src[i]);
  }
}

}  // namespace

Tensor convert_image_dtype(const Tensor& images, DType to) {
  const DType from = images.dtype();
  if (from == to) return images;
  Tensor out = Tensor::empty(to, images.shape());
  const int64_t n = images.num_elements();
  visit_numeric(from, [&](auto ftag) {
    using S = typename decltype(ftag)::type;
    visit_numeric(to, [&](auto ttag) {
      using D = typename decltype(ttag)::type;
      convert_pixels<S, D>(images.data<S>(), out.data<D>(), n);
    });
  });
  return out;
}

Tensor normalize_image(const Tensor& images, const std::vector<float>& mean, const std::vector<float>& sd) {
  Geometry g = geometry(images);
  auto per_channel = [&](const std::vector<float>& v, const char* what) {
    if (v.size() == 1) return std::vector<float>(static_cast<size_t>(g.c), v[0]);
    if (static_cast<int64_t>(v.size()) != g.c)
      throw ImageError(fmt::format("{} has {} values but the image has {} channels", what, v.size(), g.c));
    return v;
  };
  const std::vector<float> m = per_channel(mean, "mean"), s = per_channel(sd, "std");
  // The channel pattern repeated over a block of 16 pixels: the loop over a block has no channel
  // index arithmetic and vectorizes (a subtraction and a division per value, as TF computes it).
  const int64_t c = std::max<int64_t>(g.c, 1), block = c * 16;
  std::vector<float> mb(static_cast<size_t>(block)), sb(static_cast<size_t>(block));
  for (int64_t j = 0; j < block; ++j) {
    mb[static_cast<size_t>(j)] = m[static_cast<size_t>(j % c)];
    sb[static_cast<size_t>(j)] = s[static_cast<size_t>(j % c)];
  }
  Tensor out = Tensor::empty(DType::F32, images.shape());
  const int64_t n = images.num_elements();
  visit_numeric(images.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = images.data<T>();
    float* o = out.data<float>();
    const float* mp = mb.data();
    const float* sp = sb.data();
    int64_t i = 0;
    for (; i + block <= n; i += block)
      for (int64_t j = 0; j < block; ++j) o[i + j] = (static_cast<float>(load(src[i + j])) - mp[j]) / sp[j];
    for (int64_t j = 0; i < n; ++i, ++j) o[i] = (static_cast<float>(load(src[i])) - mp[j]) / sp[j];
  });
  return out;
}

Tensor rgb_to_grayscale_image(const Tensor& images) {
  Geometry g = geometry(images);
  if (g.c != 3) throw ImageError(fmt::format("rgb_to_grayscale takes RGB images (3 channels), not {}", g.c));
  const Tensor rgb = convert_image_dtype(images, DType::F32);
  Tensor grey = Tensor::empty(DType::F32, shape_of(g, g.h, g.w, 1));
  const float* p = rgb.data<float>();
  float* o = grey.data<float>();
  const int64_t pixels = g.n * g.h * g.w;
  for (int64_t i = 0; i < pixels; ++i) o[i] = p[3 * i] * 0.2989f + p[3 * i + 1] * 0.5870f + p[3 * i + 2] * 0.1140f;
  return convert_image_dtype(grey, images.dtype());
}

ColorClasses::ColorClasses(const std::vector<std::array<uint8_t, 3>>& colors)
    : classes_(static_cast<int64_t>(colors.size())) {
  // Colour -> classes through a sorted table of 24-bit keys: one binary search per change of colour
  // instead of k comparisons per pixel.
  for (int64_t j = 0; j < classes_; ++j)
    table_.push_back({(uint32_t{colors[j][0]} << 16) | (uint32_t{colors[j][1]} << 8) | colors[j][2], j});
  std::sort(table_.begin(), table_.end());
}

void ColorClasses::write(const uint8_t* rgb, int64_t n, float* out) const {
  const int64_t k = classes_;
  // The k floats of the current colour, copied per pixel: neighbouring pixels mostly share a class.
  std::vector<float> pattern(static_cast<size_t>(k), 0.0f);
  uint32_t last_key = 0xFFFFFFFFu;
#if defined(__SSE2__)
  // Streaming stores: a label's one-hot (32 MB for 512 x 512 x 32) is written once and read later, so
  // it bypasses the caches instead of evicting them (and reading every line before writing it).
  const bool stream = k % 4 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
#else
  const bool stream = false;
#endif
  for (int64_t p = 0; p < n; ++p, rgb += 3, out += k) {
    const uint32_t key = (uint32_t{rgb[0]} << 16) | (uint32_t{rgb[1]} << 8) | rgb[2];
    if (key != last_key) {
      std::fill(pattern.begin(), pattern.end(), 0.0f);
      for (auto it = std::lower_bound(table_.begin(), table_.end(), std::make_pair(key, int64_t{0}));
           it != table_.end() && it->first == key; ++it)
        pattern[static_cast<size_t>(it->second)] = 1.0f;
      last_key = key;
    }
#if defined(__SSE2__)
    if (stream) {
      for (int64_t c = 0; c < k; c += 4) _mm_stream_ps(out + c, _mm_loadu_ps(pattern.data() + c));
      continue;
    }
#endif
    std::memcpy(out, pattern.data(), static_cast<size_t>(k) * sizeof(float));
  }
#if defined(__SSE2__)
  if (stream) _mm_sfence();  // the streamed stores are ordered before whatever hands the tensor on
#endif
}

Tensor one_hot_colors_image(const Tensor& label, const std::vector<std::array<uint8_t, 3>>& colors) {
  Geometry g = geometry(label);
  if (label.dtype() != DType::U8 || g.c != 3)
    throw ImageError(
        fmt::format("one_hot_colors takes u8 RGB labels, got {} with {} channels", dtype_name(label.dtype()), g.c));
  const ColorClasses classes(colors);
  Tensor out = Tensor::empty(DType::F32, shape_of(g, g.h, g.w, classes.classes()));
  classes.write(label.raw(), g.n * g.h * g.w, out.data<float>());
  return out;
}

}  // namespace pipec

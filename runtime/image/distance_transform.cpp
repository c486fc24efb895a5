#include "runtime/image/distance_transform.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/image/decode_options.h"

namespace pipec {

namespace {

constexpr int64_t kFar = -1;  // no feature pixel on this line

// One line of the squared distance transform: d[q] = min over p of (q - p)^2 + f[p], over the p whose
// f[p] is not kFar. The lower envelope of the parabolas rooted at those p: v holds their positions,
// z the boundaries between neighbours (where two parabolas meet).
class Line {
 public:
  explicit Line(int64_t n) : v_(static_cast<size_t>(n)), z_(static_cast<size_t>(n) + 1) {}

  void transform(const int64_t* f, int64_t n, int64_t stride_f, int64_t* d, int64_t stride_d) {
    int64_t k = -1;
    for (int64_t q = 0; q < n; ++q) {
      const int64_t fq = f[q * stride_f];
      if (fq == kFar) continue;
      double s = 0;
      while (k >= 0) {
        const int64_t p = v_[static_cast<size_t>(k)];
        // The parabolas of p and q meet at s; q hides p from z[k] on when s <= z[k].
        s = static_cast<double>((fq + q * q) - (f[p * stride_f] + p * p)) / static_cast<double>(2 * (q - p));
        if (s > z_[static_cast<size_t>(k)]) break;
        --k;
      }
      ++k;
      v_[static_cast<size_t>(k)] = q;
      z_[static_cast<size_t>(k)] = k == 0 ? -std::numeric_limits<double>::infinity() : s;
    }
    if (k < 0) {
      for (int64_t q = 0; q < n; ++q) d[q * stride_d] = kFar;
      return;
    }
    z_[static_cast<size_t>(k) + 1] = std::numeric_limits<double>::infinity();
    int64_t j = 0;
    for (int64_t q = 0; q < n; ++q) {
      while (z_[static_cast<size_t>(j) + 1] < static_cast<double>(q)) ++j;
      const int64_t p = v_[static_cast<size_t>(j)];
      d[q * stride_d] = (q - p) * (q - p) + f[p * stride_f];
    }
  }

 private:
  std::vector<int64_t> v_;
  std::vector<double> z_;
};

}  // namespace

Tensor distance_transform_image(const Tensor& images) {
  const Shape& s = images.shape();
  if (images.rank() != 3 && images.rank() != 4)
    throw ImageError(
        fmt::format("expected an image [h, w, c] or a batch [n, h, w, c], got shape {}", shape_to_string(s)));
  if (images.dtype() == DType::Bytes) throw ImageError("expected pixels, got byte strings (decode the image first)");
  const bool batch = images.rank() == 4;
  const int64_t n = batch ? s[0] : 1, h = s[batch ? 1 : 0], w = s[batch ? 2 : 1], c = s[batch ? 3 : 2];
  Tensor out = Tensor::empty(DType::F32, s);
  float* o = out.data<float>();
  // Squared distances of one channel of one image, first along columns, then along rows.
  std::vector<int64_t> f(static_cast<size_t>(h * w)), g(static_cast<size_t>(h * w));
  Line line(std::max(h, w));
  visit_numeric(images.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = images.data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t base = b * h * w * c + ch;
        for (int64_t i = 0; i < h * w; ++i) f[static_cast<size_t>(i)] = load(px[base + i * c]) != 0 ? 0 : kFar;
        for (int64_t x = 0; x < w; ++x) line.transform(f.data() + x, h, w, g.data() + x, w);
        for (int64_t y = 0; y < h; ++y) line.transform(g.data() + y * w, w, 1, f.data() + y * w, 1);
        for (int64_t i = 0; i < h * w; ++i) {
          const int64_t d = f[static_cast<size_t>(i)];
          o[base + i * c] = d == kFar ? std::numeric_limits<float>::infinity()
                                      : static_cast<float>(std::sqrt(static_cast<double>(d)));
        }
      }
  });
  return out;
}

}  // namespace pipec

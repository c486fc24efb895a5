// The fused flip, convert and normalize (runtime/image/convert_normalize.h) against the three ops it
// replaces, bit for bit, on random u8 images and batches of every small channel count, with every kind
// of flip, scalar and per-channel mean and std (odd ones too: a std of 0 makes infinities and NaNs),
// written into a caller's row or into a tensor of its own.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/core/philox.h"
#include "runtime/image/convert_normalize.h"
#include "runtime/image/decode_options.h"
#include "runtime/image/transforms.h"

namespace pipec {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

std::vector<float> draw_floats(RandomStream& st, size_t n, bool allow_zero) {
  std::vector<float> v(n);
  for (float& x : v) {
    x = (st.uniform_float() - 0.3f) * 300.0f;
    if (allow_zero && st.uniform_int(0, 9) == 0) x = 0.0f;
  }
  return v;
}

TEST(ConvertNormalize, MatchesFlipConvertNormalizeBitForBit) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    RandomStream st(11, seed, 0, 0);
    const bool batch = st.uniform_int(0, 3) == 0;
    const int64_t n = batch ? st.uniform_int(1, 3) : 1, h = st.uniform_int(0, 9), w = st.uniform_int(0, 13),
                  c = st.uniform_int(1, 5);
    Shape shape = batch ? Shape{n, h, w, c} : Shape{h, w, c};
    Tensor x = Tensor::empty(DType::U8, shape);
    for (int64_t i = 0; i < x.num_elements(); ++i) x.raw()[i] = static_cast<uint8_t>(st.uniform_int(0, 255));
    ConvertNormalizeOptions o;
    const int64_t flip_kind = st.uniform_int(0, 2);  // none, left-right, up-down
    o.horizontal = flip_kind == 1;
    if (flip_kind > 0)
      for (int64_t i = 0; i < n; ++i) o.flip.push_back(st.uniform_int(0, 1) == 1);
    std::vector<float> mean, sd;
    const bool normalize = st.uniform_int(0, 4) != 0;
    if (normalize) {
      const size_t k = st.uniform_int(0, 1) == 0 ? 1 : static_cast<size_t>(c);
      mean = draw_floats(st, k, false);
      sd = draw_floats(st, k, true);
      o.mean = &mean;
      o.std = &sd;
    }
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " shape " << shape_to_string(shape) << " flip " << flip_kind
                                      << " normalize " << normalize);
    Tensor flipped = o.flip.empty() ? x : flip_image(x, o.horizontal, o.flip);
    Tensor want = convert_image_dtype(flipped, DType::F32);
    if (normalize) want = normalize_image(want, mean, sd);
    EXPECT_TRUE(same_bits(convert_normalize_image(x, o), want));
    // Into the second row of a stacked result: written there, the neighbours untouched.
    Shape stacked = shape;
    stacked.insert(stacked.begin(), 3);
    Tensor rows = Tensor::zeros(DType::F32, stacked);
    o.into = rows.row_view(1);
    Tensor got = convert_normalize_image(x, o);
    EXPECT_EQ(got.raw(), rows.row_view(1).raw());
    EXPECT_TRUE(same_bits(rows.row_view(1), want));
    EXPECT_TRUE(same_bits(rows.row_view(0), Tensor::zeros(DType::F32, shape)));
    EXPECT_TRUE(same_bits(rows.row_view(2), Tensor::zeros(DType::F32, shape)));
  }
}

TEST(ConvertNormalize, IgnoresARowOfAnotherShape) {
  Tensor x = Tensor::zeros(DType::U8, {2, 3, 3});
  ConvertNormalizeOptions o;
  Tensor other = Tensor::zeros(DType::F32, {3, 2, 3});
  o.into = other;
  Tensor got = convert_normalize_image(x, o);
  EXPECT_NE(got.raw(), other.raw());
  EXPECT_EQ(got.shape(), x.shape());
}

TEST(ConvertNormalize, ReportsWhatTheUnfusedOpsReport) {
  ConvertNormalizeOptions o;
  std::vector<float> two{1, 2}, one{1};
  o.mean = &two;
  o.std = &one;
  try {
    convert_normalize_image(Tensor::zeros(DType::U8, {2, 2, 3}), o);
    FAIL() << "no error";
  } catch (const ImageError& e) {
    EXPECT_STREQ(e.what(), "mean has 2 values but the image has 3 channels");
  }
  EXPECT_THROW(convert_normalize_image(Tensor::zeros(DType::U8, {2, 3}), ConvertNormalizeOptions{}), ImageError);
  EXPECT_THROW(convert_normalize_image(Tensor::zeros(DType::U16, {2, 2, 3}), ConvertNormalizeOptions{}), ImageError);
}

}  // namespace
}  // namespace pipec

// The image ops against TensorFlow's tf.image (fixtures made by make_image_fixtures.py; the distance
// transform against scipy's distance_transform_edt), and the
// random ops' reproducibility contract (crop_window.h): same stream -> same window and flip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/core/philox.h"
#include "runtime/image/crop_window.h"
#include "runtime/image/distance_transform.h"
#include "runtime/image/transforms.h"
#include "runtime/io/npy.h"
#include "runtime/ops/interpreter.h"
#include "runtime/ops/kernel.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

Tensor fx(const std::string& name) {
  return read_npy(std::string(PIPEC_SOURCE_DIR) + "/tests/conformance/fixtures/images/ops_" + name + ".npy");
}

Tensor input() { return fx("input_u8_7x10x3"); }

void expect_equal(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(got.equals(want));
}

void expect_close(const Tensor& got, const Tensor& want, float tol) {
  ASSERT_EQ(got.dtype(), DType::F32);
  ASSERT_EQ(got.shape(), want.shape());
  float worst = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i)
    worst = std::max(worst, std::fabs(got.data<float>()[i] - want.data<float>()[i]));
  EXPECT_LE(worst, tol);
}

TEST(ImageOps, CropOrPadMatchesTensorFlow) {
  expect_equal(crop_or_pad_image(input(), 5, 12), fx("crop_or_pad_5x12"));
  expect_equal(crop_or_pad_image(input(), 9, 4), fx("crop_or_pad_9x4"));
  expect_equal(crop_or_pad_image(input(), 8, 11), fx("crop_or_pad_8x11"));
}

TEST(ImageOps, CentralCropMatchesTensorFlow) {
  for (double f : {0.5, 0.7}) {
    CropWindow w = central_crop_window(7, 10, f);
    expect_equal(crop_image(input(), w), fx(f == 0.5 ? "central_crop_0.5" : "central_crop_0.7"));
  }
}

TEST(ImageOps, FlipsMatchTensorFlow) {
  expect_equal(flip_image(input(), true, {true}), fx("flip_left_right"));
  expect_equal(flip_image(input(), false, {true}), fx("flip_up_down"));
  expect_equal(flip_image(input(), true, {false}), input());
}

// Every pixel size (channels x element bytes), the specialized ones and the general one, in a batch
// where only some images flip: against pixels reversed one by one.
TEST(ImageOps, HorizontalFlipOfEveryPixelSize) {
  for (auto [dtype, channels] : std::vector<std::pair<DType, int64_t>>{{DType::U8, 1},
                                                                       {DType::U8, 3},
                                                                       {DType::U8, 4},
                                                                       {DType::U8, 5},
                                                                       {DType::U16, 3},
                                                                       {DType::F32, 3},
                                                                       {DType::F32, 4}}) {
    const int64_t n = 3, h = 4, w = 7;
    Tensor x = Tensor::empty(dtype, {n, h, w, channels});
    for (size_t i = 0; i < x.byte_size(); ++i) x.raw()[i] = static_cast<uint8_t>(i * 37 + 11);
    const std::vector<bool> flip = {true, false, true};
    Tensor got = flip_image(x, true, flip);
    const size_t pixel = static_cast<size_t>(channels) * dtype_size(dtype);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t c = 0; c < w; ++c) {
          const int64_t from = flip[static_cast<size_t>(i)] ? w - 1 - c : c;
          const size_t d = static_cast<size_t>((i * h + y) * w + c) * pixel,
                       s = static_cast<size_t>((i * h + y) * w + from) * pixel;
          ASSERT_EQ(std::memcmp(got.raw() + d, x.raw() + s, pixel), 0)
              << dtype_name(dtype) << " x" << channels << " image " << i;
        }
  }
}

TEST(ImageOps, ConvertImageDtypeMatchesTensorFlow) {
  expect_equal(convert_image_dtype(input(), DType::F32), fx("convert_f32"));
  expect_equal(convert_image_dtype(input(), DType::U16), fx("convert_u16"));
  expect_equal(convert_image_dtype(fx("input_f32_7x10x3"), DType::U8), fx("convert_f32_to_u8"));
  expect_equal(convert_image_dtype(fx("input_u16_7x10x3"), DType::U8), fx("convert_u16_to_u8"));
}

TEST(ImageOps, ResizeMatchesTensorFlow) {
  expect_close(resize_image(input(), 4, 6, false), fx("resize_bilinear_4x6"), 1e-4f);
  expect_close(resize_image(input(), 13, 17, false), fx("resize_bilinear_13x17"), 1e-4f);
  expect_equal(resize_image(input(), 4, 6, true), fx("resize_nearest_4x6"));
  expect_equal(resize_image(input(), 13, 17, true), fx("resize_nearest_13x17"));
}

TEST(ImageOps, NormalizePerChannel) {
  Tensor x = input();
  Tensor y = normalize_image(x, {10, 20, 30}, {2, 4, 5});
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float m[] = {10, 20, 30}, s[] = {2, 4, 5};
    EXPECT_FLOAT_EQ(y.data<float>()[i], (static_cast<float>(x.data<uint8_t>()[i]) - m[i % 3]) / s[i % 3]);
  }
  EXPECT_THROW(normalize_image(x, {1, 2}, {1}), ImageError);
}

TEST(ImageOps, RgbToGrayscaleMatchesTensorFlow) {
  expect_equal(rgb_to_grayscale_image(input()), fx("rgb_to_grayscale_u8"));
  expect_close(rgb_to_grayscale_image(fx("input_f32_7x10x3")), fx("rgb_to_grayscale_f32"), 1e-6f);
  EXPECT_THROW(rgb_to_grayscale_image(Tensor::zeros(DType::U8, {2, 2, 4})), ImageError);
}

// A batch is its images one by one.
Tensor batch_of_two(const Tensor& image) {
  Shape s = image.shape();
  s.insert(s.begin(), 2);
  Tensor b = Tensor::empty(image.dtype(), s);
  std::memcpy(b.raw(), image.raw(), image.byte_size());
  std::memcpy(b.raw() + image.byte_size(), image.raw(), image.byte_size());
  return b;
}

TEST(ImageOps, DistanceTransformMatchesScipy) {
  const Tensor mask = fx("input_mask_9x13x2");
  const Tensor want = fx("distance_transform");  // channel 1 has no click: +inf everywhere
  expect_equal(distance_transform_image(mask), want);
  expect_equal(distance_transform_image(batch_of_two(mask)), batch_of_two(want));
  // Any numeric dtype: non-zero is a click (a float mask, a bool mask).
  expect_equal(distance_transform_image(convert_image_dtype(mask, DType::F32)), want);
  Tensor one = Tensor::zeros(DType::Bool, {1, 5, 1});
  one.data<uint8_t>()[3] = 1;
  Tensor d = distance_transform_image(one);
  const float line[] = {3, 2, 1, 0, 1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.data<float>()[i], line[i]) << i;
  EXPECT_THROW(distance_transform_image(Tensor::zeros(DType::U8, {4, 4})), ImageError);
}

// The interpreter reaches both through their kernels (a spec calls them by name).
TEST(ImageOps, GrayscaleAndDistanceKernelsAreRegistered) {
  for (OpKind op : {OpKind::RgbToGrayscale, OpKind::DistanceTransform}) {
    const KernelInfo* k = find_kernel(op);
    ASSERT_NE(k, nullptr) << op_name(op);
    EXPECT_EQ(k->kind, KernelKind::PerRow);
  }
  Instr grey{OpKind::RgbToGrayscale, {0}, {}, Type::tensor(DType::U8, {7, 10, 1}), {}};
  KernelArgs a{grey, {input()}};
  expect_equal(find_kernel(OpKind::RgbToGrayscale)->fn(a), fx("rgb_to_grayscale_u8"));
  Instr dist{OpKind::DistanceTransform, {0}, {}, Type::tensor(DType::F32, {9, 13, 2}), {}};
  KernelArgs b{dist, {fx("input_mask_9x13x2")}};
  expect_equal(find_kernel(OpKind::DistanceTransform)->fn(b), fx("distance_transform"));
  // A four-channel image is refused with the op's error, not a crash.
  Instr bad{OpKind::RgbToGrayscale, {0}, {}, Type::tensor(DType::U8, {2, 2, 1}), {}};
  KernelArgs c{bad, {Tensor::zeros(DType::U8, {2, 2, 4})}};
  EXPECT_THROW(find_kernel(OpKind::RgbToGrayscale)->fn(c), OpError);
}

TEST(ImageOps, OneHotColors) {
  Tensor label = Tensor::empty(DType::U8, {1, 3, 3});
  const uint8_t px[] = {128, 0, 0, 0, 128, 0, 9, 9, 9};
  std::memcpy(label.raw(), px, 9);
  Tensor y = one_hot_colors_image(label, {{128, 0, 0}, {0, 128, 0}, {0, 0, 0}});
  ASSERT_EQ(y.shape(), (Shape{1, 3, 3}));
  const float want[] = {1, 0, 0, 0, 1, 0, 0, 0, 0};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(y.data<float>()[i], want[i]) << i;
}

TEST(ImageOps, RandomCropWindowIsAPureFunctionOfTheStream) {
  // The contract: top = uniform_int(0, h - ch), then left = uniform_int(0, w - cw).
  RandomStream a(7, 3, 41, 2), b(7, 3, 41, 2);
  CropWindow w = random_crop_window(300, 400, 256, 256, a);
  EXPECT_EQ(w.top, b.uniform_int(0, 44));
  EXPECT_EQ(w.left, b.uniform_int(0, 144));
  EXPECT_EQ(w.height, 256);
  RandomStream c(7, 3, 41, 2);
  EXPECT_THROW(random_crop_window(100, 400, 256, 256, c), ImageError);
  // Different elements get different windows (with overwhelming probability over 16 draws).
  std::set<int64_t> tops;
  for (uint64_t e = 0; e < 16; ++e) {
    RandomStream s(7, 3, e, 0);
    tops.insert(random_crop_window(1000, 1000, 10, 10, s).top);
  }
  EXPECT_GT(tops.size(), 8u);
}

// Through the interpreter: a paired random_crop (two instructions sharing op_id) cuts the same window
// out of both fields, per element, independent of chunking.
TEST(ImageOps, PairedRandomCropSharesTheWindow) {
  ExprFunction fn;
  Type img = Type::tensor(DType::U8, {kUnknownDim, kUnknownDim, 3});
  fn.add(Instr{OpKind::Param, {}, {{"field", Value::make_string("a")}}, img, {}});
  fn.add(Instr{OpKind::Param, {}, {{"field", Value::make_string("b")}}, img, {}});
  std::map<std::string, Value> attrs{
      {"height", Value::make_int(3)}, {"width", Value::make_int(4)}, {"op_id", Value::make_int(0)}};
  Type out = Type::tensor(DType::U8, {3, 4, 3});
  fn.add(Instr{OpKind::RandomCrop, {0}, attrs, out, {}});
  fn.add(Instr{OpKind::RandomCrop, {1}, attrs, out, {}});
  fn.results = {{"a", 2}, {"b", 3}};
  Chunk in;
  in.rows = 5;
  in.first_index = 10;
  Column ca, cb;
  ca.ragged = cb.ragged = true;
  for (int r = 0; r < 5; ++r) {
    ca.rows.push_back(input());
    cb.rows.push_back(input());
  }
  in.columns = {ca, cb};
  EvalContext ctx;
  ctx.seed = 5;
  auto cols = run_function(fn, {"a", "b"}, in, ctx);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_TRUE(cols[0].dense.equals(cols[1].dense));
  // Row 2 of this chunk is element 12: the same window as a chunk holding element 12 alone.
  Chunk one;
  one.rows = 1;
  one.first_index = 12;
  Column oa = ca, ob = cb;
  oa.rows.resize(1);
  ob.rows.resize(1);
  one.columns = {oa, ob};
  auto single = run_function(fn, {"a", "b"}, one, ctx);
  const size_t row_bytes = 3 * 4 * 3;
  EXPECT_EQ(std::memcmp(single[0].dense.raw(), cols[0].dense.raw() + 2 * row_bytes, row_bytes), 0);
}

// Integer to integer converts by the ratio of the maxima (TF's rule), which needs 128-bit arithmetic for
// 64-bit types and must compare maxima, not sizes: i8 -> u8 multiplies by 2 (it once divided by 0).
TEST(ImageOps, IntegerToIntegerConversionsUseTheRatioOfMaxima) {
  Tensor i8 = Tensor::empty(DType::I8, {4});
  const int8_t iv[] = {-128, -1, 0, 127};
  std::memcpy(i8.raw(), iv, sizeof iv);
  Tensor u8 = convert_image_dtype(i8, DType::U8);
  const uint8_t want_u8[] = {0, 254, 0, 254};  // cast to u8, then times 2, wrapping like TF
  for (int k = 0; k < 4; ++k) EXPECT_EQ(u8.data<uint8_t>()[k], want_u8[k]) << k;
  Tensor u64 = Tensor::empty(DType::U64, {2});
  const uint64_t uv[] = {uint64_t(1) << 63, ~uint64_t(0)};
  std::memcpy(u64.raw(), uv, sizeof uv);
  Tensor back = convert_image_dtype(u64, DType::U8);
  EXPECT_EQ(back.data<uint8_t>()[0], 128);
  EXPECT_EQ(back.data<uint8_t>()[1], 255);
}

}  // namespace
}  // namespace pipec

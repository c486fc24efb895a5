// The cropping PNG decode (runtime/image/png_decoder.h) and the fused window decode
// (runtime/image/png_window_decode.h) against the whole-image decode followed by the separate ops
// (crop_image, crop_or_pad_image, one_hot_colors_image), on random PNGs written here with libpng:
// random sizes, every colour type and bit depth, tRNS, interlaced or not, IDAT split in small chunks,
// random windows and channel counts. Also: a file cut short or with a damaged IDAT below the window
// fails as the whole decode does, and the result lands in the tensor given as `into`.
#include <gtest/gtest.h>

#include <png.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/core/philox.h"
#include "runtime/image/crop_window.h"
#include "runtime/image/png_decoder.h"
#include "runtime/image/png_window_decode.h"
#include "runtime/image/transforms.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

struct PngSpec {
  int width = 1, height = 1, color_type = PNG_COLOR_TYPE_RGB, bit_depth = 8;
  bool interlaced = false, trns = false;
};

void write_to_string(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}

// A PNG of `spec` with random samples; labels (few colours, `colors`) when given, for one_hot.
std::string random_png(const PngSpec& spec, RandomStream& st, const std::vector<std::array<uint8_t, 3>>* colors) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    ADD_FAILURE() << "libpng could not write the test image";
    return "";
  }
  png_set_write_fn(png, &out, write_to_string, nullptr);
  // Small IDAT chunks, so a decode that stops early leaves several for the tail check.
  png_set_compression_buffer_size(png, 64 + static_cast<size_t>(st.uniform_int(0, 200)));
  png_set_IHDR(png, info, static_cast<png_uint_32>(spec.width), static_cast<png_uint_32>(spec.height), spec.bit_depth,
               spec.color_type, spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  const int max_sample = (1 << spec.bit_depth) - 1;
  if (spec.color_type == PNG_COLOR_TYPE_PALETTE) {
    std::vector<png_color> pal(static_cast<size_t>(max_sample + 1));
    for (png_color& c : pal) {
      c.red = static_cast<png_byte>(st.uniform_int(0, 255));
      c.green = static_cast<png_byte>(st.uniform_int(0, 255));
      c.blue = static_cast<png_byte>(st.uniform_int(0, 255));
    }
    png_set_PLTE(png, info, pal.data(), static_cast<int>(pal.size()));
    if (spec.trns) {
      std::vector<png_byte> alpha(pal.size() / 2 + 1);
      for (png_byte& a : alpha) a = static_cast<png_byte>(st.uniform_int(0, 255));
      png_set_tRNS(png, info, alpha.data(), static_cast<int>(alpha.size()), nullptr);
    }
  } else if (spec.trns && !(spec.color_type & PNG_COLOR_MASK_ALPHA)) {
    png_color_16 t{};
    t.gray = static_cast<png_uint_16>(st.uniform_int(0, max_sample));
    t.red = static_cast<png_uint_16>(st.uniform_int(0, max_sample));
    t.green = static_cast<png_uint_16>(st.uniform_int(0, max_sample));
    t.blue = static_cast<png_uint_16>(st.uniform_int(0, max_sample));
    png_set_tRNS(png, info, nullptr, 0, &t);
  }
  png_write_info(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  std::vector<std::vector<png_byte>> rows(static_cast<size_t>(spec.height), std::vector<png_byte>(row_bytes));
  for (auto& row : rows) {
    if (colors) {  // 8-bit RGB labels in runs of one colour, as label images are
      size_t c = 0;
      for (int x = 0; x < spec.width; ++x) {
        if (x == 0 || st.uniform_int(0, 3) == 0)
          c = static_cast<size_t>(st.uniform_int(0, int64_t(colors->size()) - 1));
        std::memcpy(&row[static_cast<size_t>(x) * 3], (*colors)[c].data(), 3);
      }
    } else {
      // Smooth rows (a ramp plus noise) let libpng pick all five filters; pure noise would not.
      for (size_t i = 0; i < row.size(); ++i)
        row[i] = static_cast<png_byte>(st.uniform_int(0, 3) == 0 ? st.uniform_int(0, 255) : (i * 7) & 0xff);
    }
  }
  std::vector<png_bytep> ptrs;
  for (auto& r : rows) ptrs.push_back(r.data());
  png_write_image(png, ptrs.data());
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return out;
}

PngSpec random_spec(RandomStream& st) {
  static const int kTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                               PNG_COLOR_TYPE_RGB_ALPHA, PNG_COLOR_TYPE_PALETTE};
  PngSpec s;
  s.color_type = kTypes[st.uniform_int(0, 4)];
  std::vector<int> depths;
  if (s.color_type == PNG_COLOR_TYPE_GRAY) depths = {1, 2, 4, 8, 16};
  else if (s.color_type == PNG_COLOR_TYPE_PALETTE) depths = {1, 2, 4, 8};
  else depths = {8, 16};
  s.bit_depth = depths[static_cast<size_t>(st.uniform_int(0, static_cast<int64_t>(depths.size()) - 1))];
  s.width = static_cast<int>(st.uniform_int(1, 70));
  s.height = static_cast<int>(st.uniform_int(1, 70));
  s.interlaced = st.uniform_int(0, 2) == 0;
  s.trns = !(s.color_type & PNG_COLOR_MASK_ALPHA) && st.uniform_int(0, 2) == 0;
  return s;
}

CropWindow random_window(RandomStream& st, int64_t h, int64_t w) {
  switch (st.uniform_int(0, 5)) {
    case 0: return CropWindow{0, 0, h, w};
    case 1: return CropWindow{h - 1, w - 1, 1, 1};
    case 2: return CropWindow{0, 0, 1 + st.uniform_int(0, h - 1), w};  // full width: decoded in place
    default: break;
  }
  CropWindow win;
  win.height = 1 + st.uniform_int(0, h - 1);
  win.width = 1 + st.uniform_int(0, w - 1);
  win.top = st.uniform_int(0, h - win.height);
  win.left = st.uniform_int(0, w - win.width);
  return win;
}

WindowFn fixed(const CropWindow& win) {
  return [win](int64_t, int64_t, CropWindow& out, std::string&) {
    out = win;
    return true;
  };
}

std::string describe(const PngSpec& s) {
  return "png " + std::to_string(s.width) + "x" + std::to_string(s.height) + " type " + std::to_string(s.color_type) +
         " depth " + std::to_string(s.bit_depth) + (s.interlaced ? " interlaced" : "") + (s.trns ? " tRNS" : "");
}

TEST(PngWindowDecode, CroppedDecodeEqualsDecodeThenCropOnRandomPngs) {
  int checked = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    RandomStream st(7, i, 0, 0);
    const PngSpec spec = random_spec(st);
    const std::string data = random_png(spec, st, nullptr);
    for (int k = 0; k < 4; ++k) {
      DecodeOptions full;
      full.channels = static_cast<int>(st.uniform_int(0, 4));
      full.u16 = st.uniform_int(0, 1) == 1;
      Tensor img = decode_png_image(data, full);
      const CropWindow win = random_window(st, spec.height, spec.width);
      DecodeOptions o = full;
      o.window = fixed(win);
      Tensor cropped = decode_png_image(data, o);
      ASSERT_TRUE(cropped.equals(crop_image(img, win)))
          << describe(spec) << " channels " << full.channels << " u16 " << full.u16 << " window " << win.height << "x"
          << win.width << " at (" << win.top << ", " << win.left << ")";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1200);
}

// crop_or_pad pushed into the decode: the centred window, padded centred with zeros.
TEST(PngWindowDecode, CropOrPadEqualsTheSeparateOp) {
  for (uint64_t i = 0; i < 150; ++i) {
    RandomStream st(8, i, 0, 0);
    const PngSpec spec = random_spec(st);
    const std::string data = random_png(spec, st, nullptr);
    DecodeOptions o;
    o.channels = static_cast<int>(st.uniform_int(0, 4));
    o.u16 = st.uniform_int(0, 1) == 1;
    const Tensor img = decode_png_image(data, o);
    const int64_t th = st.uniform_int(1, 90), tw = st.uniform_int(1, 90);
    o.window = [th, tw](int64_t h, int64_t w, CropWindow& win, std::string&) {
      win = crop_or_pad_window(h, w, th, tw);
      return true;
    };
    PngWindowOutput out;
    out.pad_height = th;
    out.pad_width = tw;
    ASSERT_TRUE(decode_png_window(data, o, out).equals(crop_or_pad_image(img, th, tw)))
        << describe(spec) << " to " << th << "x" << tw;
  }
}

// The fused one-hot: decode, crop_or_pad, one_hot_colors in one row loop, written into a row of a
// bigger tensor (as the interpreter's batch) when given one.
TEST(PngWindowDecode, FusedOneHotEqualsTheSeparateOps) {
  for (uint64_t i = 0; i < 120; ++i) {
    RandomStream st(9, i, 0, 0);
    PngSpec spec;
    spec.width = static_cast<int>(st.uniform_int(1, 60));
    spec.height = static_cast<int>(st.uniform_int(1, 60));
    spec.interlaced = st.uniform_int(0, 3) == 0;
    std::vector<std::array<uint8_t, 3>> colors;
    const int64_t k = st.uniform_int(1, 12);
    for (int64_t c = 0; c < k; ++c)
      colors.push_back({static_cast<uint8_t>(st.uniform_int(0, 3) * 64),
                        static_cast<uint8_t>(st.uniform_int(0, 3) * 64),
                        static_cast<uint8_t>(st.uniform_int(0, 1) * 128)});
    // Pixels of colours outside the list (no class) and the padding's black, listed or not.
    std::vector<std::array<uint8_t, 3>> drawn = colors;
    drawn.push_back({1, 2, 3});
    if (st.uniform_int(0, 1)) colors.push_back({0, 0, 0});
    const std::string data = random_png(spec, st, &drawn);
    const Tensor img = decode_png_image(data, {});
    const int64_t th = st.uniform_int(1, 80), tw = st.uniform_int(1, 80);
    const Tensor want = one_hot_colors_image(crop_or_pad_image(img, th, tw), colors);
    DecodeOptions o;
    o.window = [th, tw](int64_t h, int64_t w, CropWindow& win, std::string&) {
      win = crop_or_pad_window(h, w, th, tw);
      return true;
    };
    const ColorClasses classes(colors);
    PngWindowOutput out;
    out.pad_height = th;
    out.pad_width = tw;
    out.one_hot = &classes;
    ASSERT_TRUE(decode_png_window(data, o, out).equals(want)) << describe(spec) << " to " << th << "x" << tw;
    // Into row 1 of a batch of 3: the result is that row, and the rows around it are untouched.
    Tensor batch = Tensor::zeros(DType::F32, {3, th, tw, static_cast<int64_t>(colors.size())});
    out.into = batch.row_view(1);
    Tensor got = decode_png_window(data, o, out);
    EXPECT_EQ(got.raw(), batch.row_view(1).raw());
    EXPECT_TRUE(batch.row_view(1).equals(want));
    EXPECT_TRUE(batch.row_view(0).equals(Tensor::zeros(DType::F32, want.shape())));
    EXPECT_TRUE(batch.row_view(2).equals(Tensor::zeros(DType::F32, want.shape())));
  }
}

TEST(PngWindowDecode, OneHotOfOtherThanRgb8IsAnError) {
  RandomStream st(10, 0, 0, 0);
  PngSpec spec;
  spec.width = spec.height = 8;
  const std::string data = random_png(spec, st, nullptr);
  const std::vector<std::array<uint8_t, 3>> colors{{0, 0, 0}};
  const ColorClasses classes(colors);
  PngWindowOutput out;
  out.one_hot = &classes;
  DecodeOptions o;
  o.channels = 4;
  EXPECT_THROW(decode_png_window(data, o, out), ImageError);
  o.channels = 3;
  o.u16 = true;
  EXPECT_THROW(decode_png_window(data, o, out), ImageError);
}

// A file cut anywhere, or with any byte of an IDAT chunk changed, fails with the cropping decode
// exactly when it fails with the whole decode, whatever the window (the tail below the window is
// walked, not inflated).
TEST(PngWindowDecode, TruncatedAndDamagedFilesFailAsTheWholeDecodeDoes) {
  for (uint64_t i = 0; i < 12; ++i) {
    RandomStream st(11, i, 0, 0);
    PngSpec spec = random_spec(st);
    spec.height = static_cast<int>(st.uniform_int(20, 60));
    const std::string data = random_png(spec, st, nullptr);
    auto fails = [](const std::string& d, const DecodeOptions& o) {
      try {
        decode_png_image(d, o);
        return std::string();
      } catch (const ImageError& e) {
        EXPECT_GT(std::strlen(e.what()), 5u);
        return std::string(e.what());
      }
    };
    const CropWindow top_rows{0, 0, 2, static_cast<int64_t>(spec.width)};
    for (size_t n = 8; n < data.size(); n += 1 + data.size() / 97) {
      const std::string cut = data.substr(0, n);
      DecodeOptions o;
      const std::string whole = fails(cut, o);
      o.window = fixed(top_rows);
      const std::string cropped = fails(cut, o);
      EXPECT_EQ(whole.empty(), cropped.empty())
          << describe(spec) << " cut at " << n << ": " << whole << " / " << cropped;
      EXPECT_FALSE(whole.empty()) << "a file cut short decodes";
    }
    // Change one byte in the data of each IDAT chunk (the CRC no longer matches).
    for (size_t at = 8; at + 12 <= data.size();) {
      const uint32_t len = (uint32_t(uint8_t(data[at])) << 24) | (uint32_t(uint8_t(data[at + 1])) << 16) |
                           (uint32_t(uint8_t(data[at + 2])) << 8) | uint32_t(uint8_t(data[at + 3]));
      if (data.compare(at + 4, 4, "IDAT") == 0 && len > 0) {
        std::string bad = data;
        bad[at + 8 + len / 2] = static_cast<char>(bad[at + 8 + len / 2] ^ 0x5a);
        DecodeOptions o;
        const std::string whole = fails(bad, o);
        o.window = fixed(top_rows);
        EXPECT_FALSE(whole.empty());
        EXPECT_FALSE(fails(bad, o).empty()) << describe(spec) << " IDAT at " << at << " damaged";
      }
      at += 12 + len;
    }
  }
}

// Every PngSuite file that decodes: random windows equal decode-then-crop (gamma, sBIT, odd sizes,
// palettes of every depth, interlaced).
TEST(PngWindowDecode, PngSuiteWindowsEqualDecodeThenCrop) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(PIPEC_SHARED_DIR) + "/testdata/external/png")) {
    if (e.path().extension() != ".png" || e.path().filename().string()[0] == 'x') continue;  // x*: corrupt
    const std::string data = testing::read_file(e.path().string());
    RandomStream st(12, static_cast<uint64_t>(files), 0, 0);
    for (int ch : {0, 1, 3, 4}) {
      DecodeOptions full;
      full.channels = ch;
      Tensor img;
      try {
        img = decode_png_image(data, full);
      } catch (const ImageError&) {
        continue;
      }
      for (int k = 0; k < 6; ++k) {
        const CropWindow win = random_window(st, img.shape()[0], img.shape()[1]);
        DecodeOptions o = full;
        o.window = fixed(win);
        ASSERT_TRUE(decode_png_image(data, o).equals(crop_image(img, win))) << e.path() << " channels " << ch;
      }
    }
    ++files;
  }
  EXPECT_GT(files, 100);
}

}  // namespace
}  // namespace pipec

// The decoders against TensorFlow: every PngSuite file and every JPEG of shared/testdata/external,
// decoded with each channel count (and u8/u16 for PNG), must give TF's shape and pixels (CRC-32 of the
// pixels, tests/conformance/fixtures/images/decode_manifest.tsv, made by make_image_fixtures.py), or
// fail where TF fails. Also: every deliberately corrupt file fails with a clear reason, the pixel limit
// refuses large images before decoding, and cropped decodes equal decode-then-crop.
#include <gtest/gtest.h>

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/core/philox.h"
#include "runtime/image/crop_window.h"
#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/png_decoder.h"
#include "runtime/image/sniff.h"
#include "runtime/image/transforms.h"
#include "runtime/io/npy.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

std::string external(const std::string& rel) { return std::string(PIPEC_SHARED_DIR) + "/testdata/external/" + rel; }
std::string fixture(const std::string& rel) {
  return std::string(PIPEC_SOURCE_DIR) + "/tests/conformance/fixtures/images/" + rel;
}

std::string crc_of(const Tensor& t) {
  uLong c = crc32(0L, Z_NULL, 0);
  c = crc32(c, t.raw(), static_cast<uInt>(t.byte_size()));
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08lx", c & 0xFFFFFFFFul);
  return buf;
}

std::string shape_key(const Tensor& t) {
  std::string s;
  for (int64_t d : t.shape()) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

struct Row {
  std::string file, dtype, shape, digest;
  int channels = 0;
};

std::vector<Row> manifest() {
  std::ifstream in(fixture("decode_manifest.tsv"));
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ls(line);
    Row r;
    std::string ch;
    std::getline(ls, r.file, '\t');
    std::getline(ls, ch, '\t');
    std::getline(ls, r.dtype, '\t');
    std::getline(ls, r.shape, '\t');
    std::getline(ls, r.digest, '\t');
    r.channels = std::stoi(ch);
    rows.push_back(r);
  }
  return rows;
}

Tensor decode_file(const Row& r) {
  std::string data = testing::read_file(external(r.file));
  DecodeOptions o;
  o.channels = r.channels;
  o.u16 = r.dtype == "u16";
  return r.file.rfind("png/", 0) == 0 ? decode_png_image(data, o) : decode_jpeg_image(data, o);
}

TEST(ImageDecode, ManifestCoversEveryFile) {
  auto rows = manifest();
  std::set<std::string> files;
  for (const Row& r : rows) files.insert(r.file);
  int on_disk = 0;
  for (const char* dir : {"png", "jpeg"})
    for (const auto& e : fs::directory_iterator(external(dir))) {
      std::string ext = e.path().extension().string();
      if (ext != ".png" && ext != ".jpg" && ext != ".jpeg") continue;
      ++on_disk;
      EXPECT_TRUE(files.count(std::string(dir) + "/" + e.path().filename().string())) << e.path();
    }
  EXPECT_EQ(static_cast<int>(files.size()), on_disk);
  EXPECT_GT(on_disk, 180);
}

TEST(ImageDecode, SamePixelsAsTensorFlow) {
  int compared = 0, refused = 0;
  for (const Row& r : manifest()) {
    SCOPED_TRACE(r.file + " channels=" + std::to_string(r.channels) + " " + r.dtype);
    if (r.shape == "error") {
      EXPECT_THROW(decode_file(r), ImageError) << "TF refuses it: " << r.digest;
      ++refused;
      continue;
    }
    Tensor t;
    try {
      t = decode_file(r);
    } catch (const ImageError& e) {
      ADD_FAILURE() << "TF decodes it, pipec says: " << e.what();
      continue;
    }
    EXPECT_EQ(shape_key(t), r.shape);
    EXPECT_EQ(crc_of(t), r.digest);
    ++compared;
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(refused, 50);
}

// Every x* file of PngSuite is corrupt on purpose: each must fail with a reason, never crash.
TEST(ImageDecode, CorruptPngSuiteFilesFailClearly) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(external("png"))) {
    std::string name = e.path().filename().string();
    if (name[0] != 'x') continue;
    ++n;
    std::string data = testing::read_file(e.path().string());
    for (int ch : {0, 3}) {
      DecodeOptions o;
      o.channels = ch;
      try {
        decode_png_image(data, o);
        ADD_FAILURE() << name << " decoded without error";
      } catch (const ImageError& err) {
        EXPECT_GT(std::string(err.what()).size(), 5u) << name;
      }
    }
  }
  EXPECT_GE(n, 10);
}

TEST(ImageDecode, TruncatedAndBrokenJpegsFailClearly) {
  for (const char* name : {"wuffs_peacock.default.truncated.jpeg", "wuffs_peacock.progressive.truncated.jpeg"}) {
    std::string data = testing::read_file(external(std::string("jpeg/") + name));
    try {
      decode_jpeg_image(data, {});
      ADD_FAILURE() << name << " decoded";
    } catch (const ImageError& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
  }
  // A cropping decode stops at the bottom of its window (as tf.image.decode_and_crop_jpeg does): a
  // window above the point where the data ends decodes, and its pixels are those of the complete file.
  {
    std::string good_file = testing::read_file(external("jpeg/wuffs_peacock.default.jpeg"));
    std::string cut = testing::read_file(external("jpeg/wuffs_peacock.default.truncated.jpeg"));
    ASSERT_EQ(good_file.substr(0, cut.size()), cut) << "the truncated file is a prefix of the good one";
    DecodeOptions o;
    o.window = [](int64_t, int64_t, CropWindow& out, std::string&) {
      out = CropWindow{2, 3, 8, 50};
      return true;
    };
    Tensor from_cut = decode_jpeg_image(cut, o);
    EXPECT_TRUE(from_cut.equals(crop_image(decode_jpeg_image(good_file, {}), CropWindow{2, 3, 8, 50})));
    // A window reaching past the end of the data fails.
    o.window = [](int64_t h, int64_t w, CropWindow& out, std::string&) {
      out = CropWindow{h - 8, 0, 8, w};
      return true;
    };
    EXPECT_THROW(decode_jpeg_image(cut, o), ImageError);
  }
  // Every prefix of a good file fails cleanly (no crash, no hang, no garbage).
  std::string good = testing::read_file(external("jpeg/wuffs_peacock.default.jpeg"));
  for (size_t n = 0; n + 1 < good.size(); n += 37)
    EXPECT_THROW(decode_jpeg_image(good.substr(0, n), {}), ImageError) << n;
  std::string png = testing::read_file(external("png/basn2c08.png"));
  for (size_t n = 0; n + 12 < png.size(); n += 29)
    EXPECT_THROW(decode_png_image(png.substr(0, n), {}), ImageError) << n;
}

TEST(ImageDecode, PixelLimitRefusesBeforeDecoding) {
  std::string jpeg = testing::read_file(external("jpeg/libjpeg-turbo_testorig.jpg"));  // 227 x 149
  DecodeOptions o;
  o.max_pixels = 227 * 149 - 1;
  try {
    decode_jpeg_image(jpeg, o);
    ADD_FAILURE() << "not refused";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("max_pixels"), std::string::npos) << e.what();
  }
  o.max_pixels = 227 * 149;
  EXPECT_EQ(decode_jpeg_image(jpeg, o).shape(), (Shape{149, 227, 3}));
  std::string png = testing::read_file(external("png/basn2c08.png"));  // 32 x 32
  o.max_pixels = 1023;
  EXPECT_THROW(decode_png_image(png, o), ImageError);
  // A PNG header claiming 60000 x 60000 pixels with no data behind it: refused by the limit, not by
  // an allocation of 10 GB.
  std::string huge = png.substr(0, 33);
  for (int k : {16, 20}) {
    huge[k] = 0;
    huge[k + 1] = 0;
    huge[k + 2] = static_cast<char>(0xEA);
    huge[k + 3] = 0x60;
  }
  uLong c = crc32(0L, reinterpret_cast<const Bytef*>(huge.data() + 12), 17);
  for (int k = 0; k < 4; ++k) huge[29 + k] = static_cast<char>((c >> (24 - 8 * k)) & 0xFF);
  try {
    decode_png_image(huge, {});
    ADD_FAILURE() << "not refused";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("max_pixels"), std::string::npos) << e.what();
  }
}

TEST(ImageDecode, SniffsFormats) {
  EXPECT_EQ(sniff_image_format(testing::read_file(external("png/basn0g01.png"))), ImageFormat::Png);
  EXPECT_EQ(sniff_image_format(testing::read_file(external("jpeg/wuffs_bricks-gray.jpeg"))), ImageFormat::Jpeg);
  EXPECT_EQ(sniff_image_format("GIF89a"), ImageFormat::Unknown);
  EXPECT_EQ(sniff_image_format(""), ImageFormat::Unknown);
}

// Crop pushdown's promise: decoding a window gives exactly the pixels of decode-then-crop, for every
// JPEG here (4:2:0, 4:4:4, grey, progressive, arithmetic) and many windows (edges, iMCU boundaries,
// odd offsets).
TEST(ImageDecode, CroppedDecodeEqualsDecodeThenCrop) {
  int checked = 0;
  for (const char* name : {"libjpeg-turbo_testorig.jpg", "libjpeg-turbo_testimgint.jpg", "libjpeg-turbo_testimgari.jpg",
                           "wuffs_peacock.default.jpeg", "wuffs_bricks-color.jpeg", "wuffs_bricks-gray.jpeg",
                           "wuffs_peacock.progressive.jpeg", "wuffs_mona-lisa.21x32.q50.jpeg"}) {
    std::string data = testing::read_file(external(std::string("jpeg/") + name));
    for (int ch : {1, 3}) {
      DecodeOptions full;
      full.channels = ch;
      Tensor img = decode_jpeg_image(data, full);
      const int64_t h = img.shape()[0], w = img.shape()[1];
      for (int k = 0; k < 24; ++k) {
        RandomStream st(99, static_cast<uint64_t>(k), static_cast<uint64_t>(ch), 0);
        CropWindow win;
        win.height = 1 + st.uniform_int(0, h - 1);
        win.width = 1 + st.uniform_int(0, w - 1);
        win.top = st.uniform_int(0, h - win.height);
        win.left = st.uniform_int(0, w - win.width);
        if (k == 0) win = CropWindow{0, 0, h, w};
        if (k == 1) win = CropWindow{h - 1, w - 1, 1, 1};
        DecodeOptions o = full;
        o.window = [win](int64_t, int64_t, CropWindow& out, std::string&) {
          out = win;
          return true;
        };
        Tensor cropped = decode_jpeg_image(data, o);
        Tensor want = crop_image(img, win);
        ASSERT_TRUE(cropped.equals(want)) << name << " channels " << ch << " window " << win.height << "x" << win.width
                                          << " at (" << win.top << ", " << win.left << ")";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8 * 2 * 24);
}

TEST(ImageDecode, WindowThatDoesNotFitIsAnError) {
  std::string data = testing::read_file(external("jpeg/libjpeg-turbo_testorig.jpg"));
  DecodeOptions o;
  o.window = [](int64_t, int64_t, CropWindow& out, std::string&) {
    out = CropWindow{100, 0, 100, 10};
    return true;
  };
  EXPECT_THROW(decode_jpeg_image(data, o), ImageError);
}

}  // namespace
}  // namespace pipec

namespace pipec {
namespace {

// Inputs the decoder fuzzer (tests/fuzz/fuzz_images.cpp) found; each must fail cleanly (those named
// jpeg_index_* broke the JPEG window index and are checked in jpeg_window_index_test.cpp).
TEST(ImageDecode, FuzzerRegressions) {
  for (const auto& e : fs::directory_iterator(std::string(PIPEC_SOURCE_DIR) + "/tests/fuzz/image_regressions")) {
    if (e.path().filename().string().rfind("jpeg_index_", 0) == 0) continue;
    std::string data = testing::read_file(e.path().string());
    for (int ch : {0, 1, 3, 4}) {
      DecodeOptions o;
      o.channels = ch;
      o.max_pixels = 1 << 20;
      EXPECT_THROW(decode_png_image(data, o), ImageError) << e.path();
      if (ch != 4) {
        EXPECT_THROW(decode_jpeg_image(data, o), ImageError) << e.path();
      }
    }
  }
}

}  // namespace
}  // namespace pipec

// The JPEG window index (runtime/image/jpeg_window_index.h) and its store (jpeg_index_cache.h): a
// window cut from the index decodes to exactly the pixels of a full decode, for every JPEG here and
// many windows; files libjpeg complains about are not indexed; the store keeps to its budget and never
// hands out the index of a file that has changed.
#include <gtest/gtest.h>

#include <jpeglib.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "runtime/core/philox.h"
#include "runtime/image/crop_window.h"
#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/jpeg_index_cache.h"
#include "runtime/image/jpeg_window_index.h"
#include "runtime/image/transforms.h"
#include "tests/fuzz/fuzz_window.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

std::string external(const std::string& rel) { return std::string(PIPEC_SHARED_DIR) + "/testdata/external/" + rel; }

DecodeOptions with_window(CropWindow win, int channels = 3) {
  DecodeOptions o;
  o.channels = channels;
  o.window = [win](int64_t, int64_t, CropWindow& out, std::string&) {
    out = win;
    return true;
  };
  return o;
}

// 4:2:0, 4:4:4, grey, progressive, arithmetic-coded, odd sizes: all rewritten and cut exactly.
const char* kGoodJpegs[] = {"libjpeg-turbo_testorig.jpg",     "libjpeg-turbo_testimgint.jpg",
                            "libjpeg-turbo_testimgari.jpg",   "wuffs_peacock.default.jpeg",
                            "wuffs_bricks-color.jpeg",        "wuffs_bricks-gray.jpeg",
                            "wuffs_peacock.progressive.jpeg", "wuffs_peacock.grayscale.jpeg",
                            "wuffs_mona-lisa.21x32.q50.jpeg", "wuffs_hippopotamus-bad-comment-length.jpeg",
                            "libjpeg-turbo_monkey12.jpg"};

TEST(JpegWindowIndex, CutWindowsDecodeToTheFullDecodesPixels) {
  int checked = 0;
  for (const char* name : kGoodJpegs) {
    std::string data = testing::read_file(external(std::string("jpeg/") + name));
    std::string why;
    auto index = JpegWindowIndex::build(data, kDefaultMaxPixels, &why);
    if (std::string(name) == "libjpeg-turbo_monkey12.jpg") {
      // 12-bit samples: this libjpeg-turbo reads 8-bit JPEGs only, and says so.
      EXPECT_EQ(index, nullptr);
      EXPECT_FALSE(why.empty());
      continue;
    }
    ASSERT_NE(index, nullptr) << name << ": " << why;
    // Progressive and arithmetic-coded files go through libjpeg's transcoder, and so does one whose
    // comment segment claims more bytes than it has (libjpeg resynchronizes on the next marker).
    const std::string n = name;
    const bool direct = n.find("progressive") == std::string::npos && n.find("ari") == std::string::npos &&
                        n.find("bad-comment-length") == std::string::npos;
    EXPECT_EQ(index->rewritten_directly(), direct) << name;
    for (int ch : {1, 3}) {
      DecodeOptions full;
      full.channels = ch;
      Tensor img = decode_jpeg_image(data, full);
      const int64_t h = img.shape()[0], w = img.shape()[1];
      ASSERT_EQ(index->height(), h);
      ASSERT_EQ(index->width(), w);
      for (int k = 0; k < 60; ++k) {
        RandomStream st(7, static_cast<uint64_t>(k), static_cast<uint64_t>(ch), 1);
        CropWindow win;
        win.height = 1 + st.uniform_int(0, std::min<int64_t>(h, 64) - 1);
        win.width = 1 + st.uniform_int(0, std::min<int64_t>(w, 64) - 1);
        win.top = st.uniform_int(0, h - win.height);
        win.left = st.uniform_int(0, w - win.width);
        // The whole image last: the windows before it find the index scanned and rewritten in part.
        if (k == 59) win = CropWindow{0, 0, h, w};
        if (k == 1) win = CropWindow{h - 1, w - 1, 1, 1};
        if (k == 2) win = CropWindow{0, 0, 1, 1};
        if (k == 3) win = CropWindow{h / 2, 0, 1, w};
        if (k == 4) win = CropWindow{0, w / 2, h, 1};
        std::optional<Tensor> got = decode_jpeg_window(*index, with_window(win, ch));
        ASSERT_TRUE(got.has_value()) << name;
        ASSERT_TRUE(got->equals(crop_image(img, win))) << name << " channels " << ch << " window " << win.height << "x"
                                                       << win.width << " at (" << win.top << ", " << win.left << ")";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 10 * 2 * 60);
}

// A JPEG of a smooth synthetic picture with some detail, encoded by libjpeg with the given chroma
// sampling (h, v of the first component; the others 1 x 1), restart interval (in MCUs, or one per MCU
// row when negative), and optimized Huffman tables (which lack codes the picture does not need).
std::string encode(int h, int w, int channels, int samp_h, int samp_v, int restart, bool optimize, bool exif) {
  std::vector<uint8_t> px(static_cast<size_t>(h * w * channels));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        px[static_cast<size_t>((y * w + x) * channels + c)] =
            static_cast<uint8_t>((x * (c + 1) + y * 3 + ((x * y) % 7) * 20) & 0xFF);
  jpeg_compress_struct ci;
  jpeg_error_mgr err;
  ci.err = jpeg_std_error(&err);
  jpeg_create_compress(&ci);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&ci, &out, &size);
  ci.image_width = static_cast<JDIMENSION>(w);
  ci.image_height = static_cast<JDIMENSION>(h);
  ci.input_components = channels;
  ci.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&ci);
  jpeg_set_quality(&ci, 90, TRUE);
  ci.comp_info[0].h_samp_factor = samp_h;
  ci.comp_info[0].v_samp_factor = samp_v;
  if (restart < 0) ci.restart_in_rows = -restart;
  else ci.restart_interval = static_cast<unsigned>(restart);
  ci.optimize_coding = optimize ? TRUE : FALSE;
  jpeg_start_compress(&ci, TRUE);
  if (exif) {
    std::string app1 = "Exif";
    app1.append(2000, 'x');
    jpeg_write_marker(&ci, JPEG_APP0 + 1, reinterpret_cast<const JOCTET*>(app1.data()),
                      static_cast<unsigned>(app1.size()));
    jpeg_write_marker(&ci, JPEG_COM, reinterpret_cast<const JOCTET*>("a comment"), 9);
  }
  while (ci.next_scanline < ci.image_height) {
    JSAMPROW row = px.data() + static_cast<size_t>(ci.next_scanline) * static_cast<size_t>(w * channels);
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  std::string bytes(reinterpret_cast<char*>(out), size);
  std::free(out);
  return bytes;
}

// The direct rewrite (jpeg_restart_rewrite.h) on every sampling libjpeg writes, with and without
// restart markers of the file's own, with standard and optimized tables, odd sizes, extra markers.
TEST(JpegWindowIndex, DirectRewriteOfEveryBaselineLayout) {
  struct Case {
    int h, w, channels, samp_h, samp_v, restart;
    bool optimize, exif;
  };
  const Case cases[] = {
      {67, 101, 3, 2, 2, 0, false, false}, {67, 101, 3, 2, 2, 0, true, true}, {80, 96, 3, 2, 1, 3, false, false},
      {75, 90, 3, 1, 2, -1, true, false},  {41, 77, 3, 1, 1, 1, false, true}, {50, 130, 3, 4, 1, 5, true, false},
      {33, 47, 1, 1, 1, 0, false, false},  {33, 47, 1, 1, 1, 4, true, true},  {1, 1, 3, 2, 2, 0, false, false},
      {200, 16, 3, 2, 2, -2, true, false},
  };
  int checked = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.w << "x" << c.h << " channels " << c.channels << " sampling " << c.samp_h
                                      << "x" << c.samp_v << " restart " << c.restart << " optimized " << c.optimize);
    const std::string data = encode(c.h, c.w, c.channels, c.samp_h, c.samp_v, c.restart, c.optimize, c.exif);
    std::string why;
    auto index = JpegWindowIndex::build(data, kDefaultMaxPixels, &why);
    ASSERT_NE(index, nullptr) << why;
    EXPECT_TRUE(index->rewritten_directly());
    Tensor img = decode_jpeg_image(data, {});
    for (int k = 0; k < 40; ++k) {
      RandomStream st(11, static_cast<uint64_t>(k), static_cast<uint64_t>(checked), 0);
      CropWindow win;
      win.height = 1 + st.uniform_int(0, c.h - 1);
      win.width = 1 + st.uniform_int(0, c.w - 1);
      win.top = st.uniform_int(0, c.h - win.height);
      win.left = st.uniform_int(0, c.w - win.width);
      if (k == 39) win = CropWindow{0, 0, c.h, c.w};  // last: the others find the index in part done
      std::optional<Tensor> got = decode_jpeg_window(*index, with_window(win));
      ASSERT_TRUE(got.has_value());
      ASSERT_TRUE(got->equals(crop_image(img, win)))
          << "window " << win.height << "x" << win.width << " at (" << win.top << ", " << win.left << ")";
      ++checked;
    }
    EXPECT_EQ(index->rewritten_mcus(), index->mcus());
    if (c.exif) {
      EXPECT_LT(index->held_bytes(), data.size()) << "the Exif block and the comment are dropped";
    }
  }
  EXPECT_EQ(checked, 10 * 40);
}

TEST(JpegWindowIndex, ACutHoldsOnlyTheWindowsMcus) {
  std::string data = testing::read_file(external("jpeg/libjpeg-turbo_testorig.jpg"));  // 227 x 149, 4:2:0
  auto index = JpegWindowIndex::build(data, kDefaultMaxPixels);
  ASSERT_NE(index, nullptr);
  ASSERT_EQ(index->mcus(), 15 * 10);
  CropWindow inside;
  const CropWindow win{index->height() / 2, index->width() / 2, 16, 16};
  std::string small;
  ASSERT_TRUE(index->cut(win, inside, small));
  // At most 3 x 3 of the 15 x 10 MCUs, and the header (tables: about 600 bytes).
  EXPECT_LT(small.size(), data.size() / 3);
  EXPECT_LE(index->rewritten_mcus(), 9);
  // The cut is a JPEG of its own: the window lies inside it, at most one MCU plus the margin from its
  // edges.
  Tensor whole_cut = decode_jpeg_image(small, {});
  EXPECT_GE(inside.top, 0);
  EXPECT_GE(inside.left, 0);
  EXPECT_LE(inside.top, 16 + JpegWindowIndex::kWindowMarginPixels);
  EXPECT_LE(inside.left, 16 + JpegWindowIndex::kWindowMarginPixels);
  EXPECT_LE(inside.top + win.height, whole_cut.shape()[0]);
  EXPECT_LE(inside.left + win.width, whole_cut.shape()[1]);
  EXPECT_TRUE(crop_image(whole_cut, inside).equals(crop_image(decode_jpeg_image(data, {}), win)));
}

// The index entropy-decodes rows only as far as its windows need (and one row more), and rewrites
// only the MCUs its windows hold; once every MCU is rewritten it drops the scan's bytes and is about
// the size of the file.
TEST(JpegWindowIndex, DecodesOnlyTheRowsItsWindowsNeed) {
  std::string data = testing::read_file(external("jpeg/libjpeg-turbo_testorig.jpg"));  // 15 x 10 MCUs of 16
  auto index = JpegWindowIndex::build(data, kDefaultMaxPixels);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->scanned_mcus(), 0);
  EXPECT_GT(index->memory_bytes(), index->held_bytes()) << "the budget counts the rewrite still to come";
  Tensor img = decode_jpeg_image(data, {});
  // Rows 0..11 with the 4-pixel margin: MCU row 0 and the row below it for upsampling.
  const CropWindow top{0, 20, 12, 30};
  ASSERT_TRUE(decode_jpeg_window(*index, with_window(top)).value().equals(crop_image(img, top)));
  EXPECT_EQ(index->scanned_mcus(), 2 * 15);
  EXPECT_EQ(index->rewritten_mcus(), 3);  // columns 16..53 of MCU row 0
  // A window lower down scans on from where the first stopped; one above rewrites nothing new.
  const CropWindow lower{100, 100, 20, 20};
  ASSERT_TRUE(decode_jpeg_window(*index, with_window(lower)).value().equals(crop_image(img, lower)));
  EXPECT_EQ(index->scanned_mcus(), 9 * 15);
  const int64_t rewritten = index->rewritten_mcus();
  ASSERT_TRUE(decode_jpeg_window(*index, with_window(top)).value().equals(crop_image(img, top)));
  EXPECT_EQ(index->rewritten_mcus(), rewritten);
  // The whole image: everything scanned and rewritten, the scan's bytes dropped.
  const CropWindow all{0, 0, img.shape()[0], img.shape()[1]};
  ASSERT_TRUE(decode_jpeg_window(*index, with_window(all)).value().equals(img));
  EXPECT_EQ(index->scanned_mcus(), index->mcus());
  EXPECT_EQ(index->rewritten_mcus(), index->mcus());
  EXPECT_LT(index->held_bytes(), data.size() * 13 / 10);
  EXPECT_GT(index->held_bytes(), data.size() * 8 / 10);
}

// A scan of 32 KB or more is walked with the several-symbols-per-lookup AC tables (jpeg_huffman.h)
// at once, even with code tables of its own (optimized): its windows decode exactly too.
TEST(JpegWindowIndex, LargeScansWithTheirOwnTables) {
  const std::string data = encode(480, 640, 3, 2, 2, 0, true, false);
  ASSERT_GT(data.size(), size_t{48 * 1024});
  std::string why;
  auto index = JpegWindowIndex::build(data, kDefaultMaxPixels, &why);
  ASSERT_NE(index, nullptr) << why;
  Tensor img = decode_jpeg_image(data, {});
  for (int k = 0; k < 30; ++k) {
    RandomStream st(29, static_cast<uint64_t>(k), 0, 0);
    CropWindow win;
    win.height = 1 + st.uniform_int(0, 479);
    win.width = 1 + st.uniform_int(0, 639);
    win.top = st.uniform_int(0, 480 - win.height);
    win.left = st.uniform_int(0, 640 - win.width);
    std::optional<Tensor> got = decode_jpeg_window(*index, with_window(win));
    ASSERT_TRUE(got.has_value());
    ASSERT_TRUE(got->equals(crop_image(img, win)))
        << "window " << win.height << "x" << win.width << " at (" << win.top << ", " << win.left << ")";
  }
}

// Damage in the entropy-coded data is found when a window first needs its rows: windows above it
// still come from the index (the ordinary cropping decode reads no damage for them either); the first
// window that reaches it is refused, with the window it asked for, and so is every later one.
TEST(JpegWindowIndex, DamageIsFoundWhenAWindowReachesIt) {
  // 200 x 96, 4:2:0, a restart marker after every MCU row: 13 segments.
  std::string data = encode(200, 96, 3, 2, 2, -1, false, false);
  std::vector<size_t> markers;  // where each RSTn marker starts
  for (size_t at = 0; at + 1 < data.size(); ++at)
    if (static_cast<unsigned char>(data[at]) == 0xFF && (static_cast<unsigned char>(data[at + 1]) & 0xF8) == 0xD0)
      markers.push_back(at);
  ASSERT_EQ(markers.size(), 12u);
  // MCU row 9 keeps 2 of its bytes: its MCUs run past the end of their segment.
  ASSERT_GT(markers[9], markers[8] + 100);
  data.erase(markers[8] + 4, markers[9] - (markers[8] + 4));
  auto index = JpegWindowIndex::build(data, kDefaultMaxPixels);
  ASSERT_NE(index, nullptr) << "the damage is not where any window has looked yet";
  const CropWindow top{0, 0, 64, 96};
  std::optional<Tensor> got = decode_jpeg_window(*index, with_window(top));
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->equals(decode_jpeg_image(data, with_window(top))));
  const CropWindow bottom{170, 10, 30, 40};
  CropWindow asked;
  EXPECT_FALSE(decode_jpeg_window(*index, with_window(bottom), &asked).has_value());
  EXPECT_EQ(asked.top, bottom.top);
  EXPECT_EQ(asked.left, bottom.left);
  EXPECT_EQ(asked.height, bottom.height);
  EXPECT_EQ(asked.width, bottom.width);
  EXPECT_FALSE(decode_jpeg_window(*index, with_window(top)).has_value()) << "refused from then on";
  // The ordinary decode, which the caller falls back to, still decodes the window (libjpeg recovers).
  EXPECT_EQ(decode_jpeg_image(data, with_window(bottom)).shape()[0], 30);
}

TEST(JpegWindowIndex, FilesLibjpegComplainsAboutAreNotIndexed) {
  for (const char* name : {"wuffs_peacock.default.truncated.jpeg", "wuffs_peacock.progressive.truncated.jpeg"}) {
    std::string why;
    EXPECT_EQ(
        JpegWindowIndex::build(testing::read_file(external(std::string("jpeg/") + name)), kDefaultMaxPixels, &why),
        nullptr);
    EXPECT_NE(why.find("truncated"), std::string::npos) << name << ": " << why;
  }
  std::string good = testing::read_file(external("jpeg/libjpeg-turbo_testorig.jpg"));  // 227 x 149
  std::string why;
  EXPECT_EQ(JpegWindowIndex::build(good, 227 * 149 - 1, &why), nullptr);
  EXPECT_NE(why.find("max_pixels"), std::string::npos) << why;
  // Damaged entropy-coded data that libjpeg decodes with a warning (it substitutes zeros): a flipped
  // byte in the middle of the scan.
  std::string damaged = good;
  for (size_t at = good.size() / 2; at < good.size() / 2 + 64; ++at) damaged[at] = static_cast<char>(0xFF);
  EXPECT_EQ(JpegWindowIndex::build(damaged, kDefaultMaxPixels, &why), nullptr);
  // Every prefix and garbage: no index, no crash.
  for (size_t n = 0; n + 1 < good.size(); n += 97)
    EXPECT_EQ(JpegWindowIndex::build(good.substr(0, n), kDefaultMaxPixels), nullptr) << n;
  EXPECT_EQ(JpegWindowIndex::build("not a jpeg at all", kDefaultMaxPixels), nullptr);
}

// A progressive file cut after its first scans, at a valid end of image: libjpeg decodes it without a
// warning and smooths the blocks whose AC coefficients never came; a baseline rewrite would not, so the
// file is not indexed (the cut's pixels would differ from the full decode's).
TEST(JpegWindowIndex, ProgressiveFilesWithUnsentCoefficientsAreNotIndexed) {
  const std::string whole = testing::read_file(external("jpeg/wuffs_peacock.progressive.jpeg"));
  ASSERT_NE(JpegWindowIndex::build(whole, kDefaultMaxPixels), nullptr);
  std::vector<size_t> scans;  // where each SOS marker starts
  for (size_t at = 0; at + 1 < whole.size(); ++at)
    if (static_cast<unsigned char>(whole[at]) == 0xFF && static_cast<unsigned char>(whole[at + 1]) == 0xDA)
      scans.push_back(at);
  ASSERT_GE(scans.size(), 3u);
  const std::string first_scans = whole.substr(0, scans[2]) + "\xFF\xD9";
  EXPECT_EQ(decode_jpeg_image(first_scans, {}).rank(), 3);  // decodes: a valid, coarser image
  std::string why;
  EXPECT_EQ(JpegWindowIndex::build(first_scans, kDefaultMaxPixels, &why), nullptr);
  EXPECT_NE(why.find("unsent"), std::string::npos) << why;
}

// Fill bytes (extra FFs) may stand before a marker, not before a stuffed zero: FF FF 00 in the scan
// is refused by the direct rewrite (libjpeg-turbo's fast decoder takes it for a marker, its slow one for
// a data byte), while FF FF before the end-of-image marker is still read.
TEST(JpegWindowIndex, FillBytesOnlyBeforeAMarker) {
  const std::string good = testing::read_file(external("jpeg/libjpeg-turbo_testorig.jpg"));
  std::string why;
  ASSERT_TRUE(RestartRewriter().open(good, kDefaultMaxPixels, why)) << why;
  const size_t sos = good.find("\xFF\xDA");
  ASSERT_NE(sos, std::string::npos);
  const size_t stuffed = good.find(std::string("\xFF\x00", 2), sos + 2);
  ASSERT_NE(stuffed, std::string::npos);
  std::string filled = good;
  filled.insert(stuffed, "\xFF");
  EXPECT_FALSE(RestartRewriter().open(filled, kDefaultMaxPixels, why));
  EXPECT_NE(why.find("fill bytes"), std::string::npos) << why;
  std::string before_eoi = good;
  ASSERT_EQ(before_eoi.substr(before_eoi.size() - 2), "\xFF\xD9");
  before_eoi.insert(before_eoi.size() - 2, "\xFF\xFF");
  EXPECT_TRUE(RestartRewriter().open(before_eoi, kDefaultMaxPixels, why)) << why;
}

// Inputs the image fuzzer found that broke the index (jpeg_index_overrun.bin: a block's symbols ran past
// the end of the scan, and the reader past its buffer; jpeg_index_huffman_overflow.bin: a Huffman table
// with more codes than its lengths allow; jpeg_index_disagree.bin: corrupt arithmetic-coded data whose
// coefficients libjpeg's encoder could not code; jpeg_index_disagree2.bin: a file both decoders
// refuse; jpeg_index_block_smoothing.bin: a progressive file whose scans leave coefficients unsent,
// which libjpeg smooths; jpeg_index_fill_bytes.bin: FF FF 00 inside a baseline scan, which
// libjpeg-turbo's fast and slow Huffman decoders read differently): the index and the cropping decode
// agree, on the fuzzer's window and others.
TEST(JpegWindowIndex, FuzzerRegressions) {
  int files = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(PIPEC_SOURCE_DIR) + "/tests/fuzz/image_regressions")) {
    if (e.path().filename().string().rfind("jpeg_index_", 0) != 0) continue;
    ++files;
    const std::string data = testing::read_file(e.path().string());
    auto index = JpegWindowIndex::build(data, 1 << 20);
    if (!index) continue;
    std::vector<int> picks = {static_cast<unsigned char>(data.back())};  // the fuzzer's window
    for (int pick = 0; pick < 256; pick += 17) picks.push_back(pick);
    for (int pick : picks) {
      DecodeOptions o;
      o.max_pixels = 1 << 20;
      o.window = [pick](int64_t h, int64_t w, CropWindow& win, std::string&) {
        win = fuzz_window(pick, h, w);
        return true;
      };
      std::optional<Tensor> cropped;
      try {
        cropped = decode_jpeg_image(data, o);
      } catch (const ImageError&) {
      }
      // As the decode op does: the ordinary decode when the index finds damage where the window lies.
      auto through_index = [&]() {
        std::optional<Tensor> got = decode_jpeg_window(*index, o);
        return got ? std::move(*got) : decode_jpeg_image(data, o);
      };
      if (cropped) EXPECT_TRUE(through_index().equals(*cropped)) << e.path() << " pick " << pick;
      else EXPECT_THROW(through_index(), ImageError) << e.path() << " pick " << pick;
    }
  }
  EXPECT_GE(files, 1);
}

TEST(JpegWindowIndex, DecodeAsksForTheWindowOnceAndChecksIt) {
  std::string data = testing::read_file(external("jpeg/libjpeg-turbo_testorig.jpg"));
  auto index = JpegWindowIndex::build(data, kDefaultMaxPixels);
  ASSERT_NE(index, nullptr);
  int asked = 0;
  DecodeOptions o;
  o.window = [&asked](int64_t h, int64_t w, CropWindow& out, std::string&) {
    ++asked;
    EXPECT_EQ(h, 149);
    EXPECT_EQ(w, 227);
    out = CropWindow{100, 0, 100, 10};  // past the bottom
    return true;
  };
  try {
    decode_jpeg_window(*index, o);
    ADD_FAILURE() << "a window past the bottom decoded";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(asked, 1);
  o.max_pixels = 1000;
  try {
    decode_jpeg_window(*index, o);
    ADD_FAILURE() << "the pixel limit was not applied";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("max_pixels"), std::string::npos) << e.what();
  }
}

TEST(JpegIndexCache, KeepsToItsBudget) {
  std::string data = testing::read_file(external("jpeg/wuffs_peacock.default.jpeg"));
  auto index = JpegWindowIndex::build(data, kDefaultMaxPixels);
  ASSERT_NE(index, nullptr);
  const int64_t one = static_cast<int64_t>(index->memory_bytes());
  JpegIndexCache cache(one * 2 + 1000);
  EXPECT_FALSE(cache.find("a").known);
  EXPECT_TRUE(cache.has_room(data.size()));
  cache.remember("a", index);
  cache.remember("b", index);
  EXPECT_FALSE(cache.has_room(data.size()));
  cache.remember("c", index);  // over budget: remembered as not indexed
  cache.remember("d", nullptr);
  JpegIndexCache::Lookup a = cache.find("a"), c = cache.find("c"), d = cache.find("d");
  EXPECT_TRUE(a.known && a.index);
  EXPECT_TRUE(c.known && !c.index);
  EXPECT_TRUE(d.known && !d.index);
  JpegIndexCache::Stats s = cache.stats();
  EXPECT_EQ(s.indexed, 2);
  EXPECT_EQ(s.unindexable, 2);
  EXPECT_EQ(s.hits, 1);
  EXPECT_LE(s.bytes, s.budget);
  JpegIndexCache off(0);
  EXPECT_FALSE(off.has_room(1));
}

TEST(JpegIndexCache, AChangedFileGetsANewKey) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/a.jpg";
  testing::write_file(path, "first contents");
  const std::string k1 = jpeg_file_key(path);
  EXPECT_FALSE(k1.empty());
  EXPECT_EQ(jpeg_file_key(path), k1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  testing::write_file(path, "other contents, longer");
  EXPECT_NE(jpeg_file_key(path), k1);
  EXPECT_EQ(jpeg_file_key(dir.path() + "/missing.jpg"), "");
  EXPECT_EQ(jpeg_file_key(dir.path()), "") << "a directory is not a file";
  EXPECT_EQ(jpeg_bytes_key("abc"), jpeg_bytes_key(std::string("abc")));
  EXPECT_NE(jpeg_bytes_key("abc"), jpeg_bytes_key("abd"));
  EXPECT_NE(jpeg_bytes_key(std::string(16, 'x')), jpeg_bytes_key(std::string(17, 'x')));
  EXPECT_NE(jpeg_bytes_key(""), jpeg_bytes_key(std::string(1, '\0')));
}

TEST(JpegIndexCache, ParsesMemorySizes) {
  EXPECT_EQ(parse_memory_size("0"), 0);
  EXPECT_EQ(parse_memory_size("4096"), 4096);
  EXPECT_EQ(parse_memory_size("512K"), 512 << 10);
  EXPECT_EQ(parse_memory_size("512M"), int64_t{512} << 20);
  EXPECT_EQ(parse_memory_size("2G"), int64_t{2} << 30);
  EXPECT_EQ(parse_memory_size("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(parse_memory_size("1t"), int64_t{1} << 40);
  for (const char* bad : {"", "M", "-1", "12X", "1.5G", "99999999999999999999", "4GB5"})
    EXPECT_EQ(parse_memory_size(bad), -1) << bad;
}

}  // namespace
}  // namespace pipec

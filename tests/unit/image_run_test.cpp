// `pipec run` on bad images: a corrupt file is an error naming the spec location, the file and the
// reason; under ignore_errors it is dropped and counted. Every deliberately corrupt PngSuite file (x*)
// and every truncated JPEG of shared/testdata/external is covered.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
namespace fs = std::filesystem;

std::string external(const std::string& rel) { return std::string(PIPEC_SHARED_DIR) + "/testdata/external/" + rel; }

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

TEST(ImageRun, CorruptFilesNameTheFileAndTheReason) {
  std::vector<std::string> bad;
  for (const auto& e : fs::directory_iterator(external("png")))
    if (e.path().filename().string()[0] == 'x') bad.push_back(e.path().string());
  bad.push_back(external("jpeg/wuffs_peacock.default.truncated.jpeg"));
  bad.push_back(external("jpeg/wuffs_peacock.progressive.truncated.jpeg"));
  ASSERT_EQ(bad.size(), 16u);
  for (const std::string& file : bad) {
    ScratchDir d;
    const bool png = file.size() > 4 && file.substr(file.size() - 4) == ".png";
    write_text(d / "p.pipe", "import images\npipeline p = files(\"" + file + "\")\n  | map(r => { x: " +
                                 (png ? "read_png_rgb" : "read_jpeg_rgb") + "(r.path) })\n");
    auto r = run_pipec({"run", (d / "p.pipe").string(), "--quiet"});
    EXPECT_NE(r.exit_code, 0) << file;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(png ? "decode_png" : "decode_jpeg"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(png ? "bad PNG: " : "truncated"), std::string::npos) << r.err;
  }
}

TEST(ImageRun, IgnoreErrorsDropsAndCountsBadImages) {
  ScratchDir d;
  // All 14 x* files fail and 161 other PNGs decode.
  write_text(d / "p.pipe", "import images\npipeline p = files(\"" + external("png") +
                               "/*.png\")\n  | map(r => { x: read_png_rgb(r.path) | crop_or_pad(8, 8) })\n  | ignore_errors\n");
  auto r = run_pipec({"run", (d / "p.pipe").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(14 dropped by ignore_errors)"), std::string::npos) << r.err;
}

TEST(ImageRun, PixelLimitRefusesLargeImages) {
  ScratchDir d;
  write_text(d / "p.pipe", "pipeline p = files(\"" + external("jpeg/libjpeg-turbo_testorig.jpg") +
                               "\")\n  | map(r => { x: decode_jpeg(read_file(r.path), max_pixels = 1000) })\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--quiet"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("more than max_pixels = 1000"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pipec

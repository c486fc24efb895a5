// `pipec run` on bad images: a corrupt file is an error naming the spec location, the file and the
// reason; under ignore_errors it is dropped and counted. Every deliberately corrupt PngSuite file (x*)
// and every truncated JPEG of shared/testdata/external is covered.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
namespace fs = std::filesystem;

std::string external(const std::string& rel) { return std::string(PIPEC_SHARED_DIR) + "/testdata/external/" + rel; }

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

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
  write_text(d / "p.pipe",
             "import images\npipeline p = files(\"" + external("png") +
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

namespace pipec {
namespace {

// The JPEG window index end to end: `pipec run` reports it, its output equals the run without it
// (PIPEC_JPEG_INDEX_MEMORY=0) and the unoptimized run, byte for byte, over four epochs; a budget too
// small for every file indexes some and says it is full.
TEST(ImageRun, JpegIndexIsReportedAndChangesNothingButSpeed) {
  ScratchDir d;
  fs::create_directories(d / "img");
  for (const char* name : {"libjpeg-turbo_testorig.jpg", "libjpeg-turbo_testimgint.jpg", "wuffs_bricks-color.jpeg",
                           "wuffs_peacock.default.jpeg", "wuffs_peacock.progressive.jpeg", "wuffs_bricks-gray.jpeg"})
    fs::copy_file(external(std::string("jpeg/") + name), d / "img" / name);
  write_text(d / "p.pipe",
             "import images\npipeline p = files(\"img/*.jp*g\")\n  | repeat(4)\n"
             "  | map(r => { x: read_jpeg_rgb(r.path) | random_crop(40, 40) | random_flip_left_right })\n");
  auto run = [&](const std::string& out, const std::string& memory, std::vector<std::string> extra) {
    if (memory.empty()) unsetenv("PIPEC_JPEG_INDEX_MEMORY");
    else setenv("PIPEC_JPEG_INDEX_MEMORY", memory.c_str(), 1);
    std::vector<std::string> args = {"run",          (d / "p.pipe").string(),        "--output", (d / out).string(),
                                     "--stats-json", (d / (out + ".json")).string(), "--seed",   "3"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_pipec(args);
    unsetenv("PIPEC_JPEG_INDEX_MEMORY");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  // The map on the thread that pulls from it (parallel = 1, no pool tasks: with tasks, a thread waiting
  // for one may run the next beside the worker, ThreadPool::wait_helping): it then never decodes a
  // file's next epoch while its first is still being indexed, so the counts are exact.
  auto indexed = run("indexed", "", {"--threads", "1", "--auto-value", "parallel=1"});
  EXPECT_NE(indexed.err.find("jpeg index  6 files"), std::string::npos) << indexed.err;
  EXPECT_NE(indexed.err.find("18 windows cut from it"), std::string::npos) << indexed.err;
  const nlohmann::json json = nlohmann::json::parse(testing::read_all(d / "indexed.json"));
  EXPECT_EQ(json["jpeg_index"]["indexed"], 6) << json.dump();
  EXPECT_EQ(json["jpeg_index"]["unindexable"], 0) << json.dump();
  auto off = run("off", "0", {});
  EXPECT_EQ(off.err.find("jpeg index"), std::string::npos) << off.err;
  EXPECT_EQ(nlohmann::json::parse(testing::read_all(d / "off.json"))["jpeg_index"]["indexed"], 0);
  run("reference", "", {"-O0"});
  // Room for about two of the six files.
  auto small = run("small", "20K", {});
  EXPECT_NE(small.err.find("full: later files decode the usual way"), std::string::npos) << small.err;
  int compared = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "indexed")) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = fs::relative(e.path(), d / "indexed");
    const std::string want = testing::read_all(e.path());
    EXPECT_EQ(testing::read_all(d / "off" / rel), want) << rel;
    EXPECT_EQ(testing::read_all(d / "reference" / rel), want) << rel;
    EXPECT_EQ(testing::read_all(d / "small" / rel), want) << rel;
    ++compared;
  }
  EXPECT_EQ(compared, 24);
}

}  // namespace
}  // namespace pipec

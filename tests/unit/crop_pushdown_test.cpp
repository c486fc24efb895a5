// Crop pushdown (compiler/passes/crop_pushdown.h): which plans it rewrites, and that the rewritten plan
// gives exactly the pixels of the original (decode everything, then crop) on real JPEGs, with the same
// random windows.
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/passes/crop_pushdown.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/plan/plan.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

std::string jpeg_dir() { return std::string(PIPEC_SHARED_DIR) + "/testdata/external/jpeg"; }

Plan plan_of(const std::string& body) {
  std::string text =
      "pipeline p = files(\"" + jpeg_dir() + "/*.jp*g\")\n  | filter(r => true)\n  | map(r => " + body + ")\n";
  return testing::compiled_plan(text, "p", testing::lowered_only(), "/tmp/crop_pushdown_test.pipe");
}

int count_op(const Plan& p, const std::string& op) {
  int n = 0;
  for (const Stage& s : p.stages)
    if (s.fn)
      for (const Instr& in : s.fn->body) n += in.op == op_from_name(op).value();
  return n;
}

const char* kGood = "{ img: decode_jpeg(read_file(r.path)) }";

TEST(CropPushdown, RewritesRandomCropOfJpegDecode) {
  Plan p = plan_of("{ img: random_crop(decode_jpeg(read_file(r.path), channels = 3), 16, 20, seed = 4) }");
  ASSERT_EQ(count_op(p, "random_crop"), 1);
  Plan q = testing::copy_plan(p);
  EXPECT_TRUE(crop_pushdown(q));
  EXPECT_EQ(count_op(q, "random_crop"), 0);
  EXPECT_TRUE(verify_plan(q).empty());
  bool found = false;
  for (const Stage& s : q.stages)
    if (s.fn)
      for (const Instr& in : s.fn->body)
        if (in.op == OpKind::DecodeJpeg) {
          found = true;
          EXPECT_EQ(in.attrs.at("crop").s, "random");
          EXPECT_EQ(in.type.shape, (std::vector<int64_t>{16, 20, 3}));
        }
  EXPECT_TRUE(found);
  EXPECT_FALSE(crop_pushdown(q)) << "a second run has nothing left to do";
}

TEST(CropPushdown, RewritesCropsOfPngDecode) {
  for (const char* body : {"{ img: random_crop(decode_png(read_file(r.path)), 8, 8) }",
                           "{ img: central_crop(decode_png(read_file(r.path)), 0.5) }",
                           "{ img: crop_or_pad(decode_png(read_file(r.path), channels = 3), 8, 30) }"}) {
    SCOPED_TRACE(body);
    Plan q = plan_of(body);
    EXPECT_TRUE(crop_pushdown(q));
    EXPECT_TRUE(verify_plan(q).empty());
    EXPECT_EQ(count_op(q, "random_crop") + count_op(q, "central_crop") + count_op(q, "crop_or_pad"), 0);
  }
  // Only the PNG decoder pads: crop_or_pad stays after decode_jpeg.
  Plan jpeg = plan_of("{ img: crop_or_pad(decode_jpeg(read_file(r.path), channels = 3), 8, 30) }");
  EXPECT_FALSE(crop_pushdown(jpeg));
}

TEST(CropPushdown, LeavesOtherPlansAlone) {
  // decode_image may be either format.
  Plan image = plan_of("{ img: central_crop(decode_image(read_file(r.path)), 0.5) }");
  EXPECT_FALSE(crop_pushdown(image));
  // The full image is used elsewhere too.
  Plan shared = plan_of("{ d = decode_jpeg(read_file(r.path)); { a: random_crop(d, 8, 8), b: flip_left_right(d) } }");
  EXPECT_FALSE(crop_pushdown(shared));
  Plan none = plan_of(kGood);
  EXPECT_FALSE(crop_pushdown(none));
}

// The JPEGs that decode in full (a cropping decode stops at its window, so a file truncated below the
// window passes with pushdown and fails without it: the comparison uses complete files).
std::string good_files_spec(const std::filesystem::path& dir, const std::string& map_body) {
  for (const char* name : {"libjpeg-turbo_testorig.jpg", "libjpeg-turbo_testimgint.jpg", "libjpeg-turbo_testimgari.jpg",
                           "wuffs_bricks-color.jpeg", "wuffs_bricks-gray.jpeg", "wuffs_peacock.default.jpeg",
                           "wuffs_peacock.progressive.jpeg", "wuffs_peacock.grayscale.jpeg",
                           "wuffs_mona-lisa.21x32.q50.jpeg", "wuffs_hippopotamus-bad-comment-length.jpeg"})
    std::filesystem::copy_file(jpeg_dir() + "/" + name, dir / name, std::filesystem::copy_options::overwrite_existing);
  return "pipeline p = files(\"" + dir.string() + "/*.jp*g\")\n  | map(r => " + map_body + ")\n";
}

Plan plan_text(const std::string& text) {
  return testing::compiled_plan(text, "p", testing::lowered_only(), "/tmp/crop_pushdown_test.pipe");
}

TEST(CropPushdown, SamePixelsAsDecodeThenCrop) {
  testing::ScratchDir dir;
  for (const char* body : {"{ img: random_crop(decode_jpeg(read_file(r.path)), 17, 13) }",
                           "{ img: random_crop(decode_jpeg(read_file(r.path), channels = 1), 21, 21) }",
                           "{ img: central_crop(decode_jpeg(read_file(r.path)), 0.4) }",
                           "{ img: flip_left_right(random_crop(decode_jpeg(read_file(r.path)), 9, 20)) }"}) {
    SCOPED_TRACE(body);
    Plan p = plan_text(good_files_spec(dir.path(), body));
    Plan q = testing::copy_plan(p);
    ASSERT_TRUE(crop_pushdown(q));
    for (uint64_t seed : {1u, 2u}) {
      std::vector<Tensor> a = testing::run_tensors(p, seed, 1), b = testing::run_tensors(q, seed, 2);
      ASSERT_EQ(a.size(), b.size());
      ASSERT_EQ(a.size(), 10u);  // every file, one field
      for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equals(b[i])) << "element " << i << " seed " << seed;
    }
  }
}

}  // namespace
}  // namespace pipec

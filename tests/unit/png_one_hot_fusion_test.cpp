// PNG crop pushdown and one-hot fusion (compiler/passes/crop_pushdown.h, png_one_hot_fusion.h) on whole
// pipelines: which plans they rewrite, and that the optimized plan (the decode cropping, padding and
// one-hot encoding in its row loop, written straight into the batch's rows) gives exactly the tensors
// of the plan as lowered (decode, crop_or_pad, one_hot_colors, batch), on random label PNGs of sizes
// around the crop (crop, pad, both).
#include <gtest/gtest.h>

#include <fstream>

#include "compiler/passes/crop_pushdown.h"
#include "compiler/passes/png_one_hot_fusion.h"
#include "runtime/core/philox.h"
#include "runtime/image/encoders.h"
#include "runtime/plan/plan.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

const char* kColors = "name,r,g,b\nsky,128,128,128\nroad,128,64,128\nvoid,0,0,0\ncar,64,0,128\n";

// Random label PNGs (runs of the four colours and one that is no class) and photos, sized around 24x20.
void write_pngs(const std::filesystem::path& dir, int n) {
  std::filesystem::create_directories(dir / "label");
  std::filesystem::create_directories(dir / "image");
  const uint8_t colors[5][3] = {{128, 128, 128}, {128, 64, 128}, {0, 0, 0}, {64, 0, 128}, {7, 7, 7}};
  for (int i = 0; i < n; ++i) {
    RandomStream st(3, static_cast<uint64_t>(i), 0, 0);
    const int64_t h = st.uniform_int(12, 36), w = st.uniform_int(10, 30);
    Tensor label = Tensor::empty(DType::U8, {h, w, 3}), image = Tensor::empty(DType::U8, {h, w, 3});
    size_t c = 0;
    for (int64_t p = 0; p < h * w; ++p) {
      if (st.uniform_int(0, 4) == 0) c = static_cast<size_t>(st.uniform_int(0, 4));
      for (int k = 0; k < 3; ++k) {
        label.raw()[p * 3 + k] = colors[c][k];
        image.raw()[p * 3 + k] = static_cast<uint8_t>(st.uniform_int(0, 255));
      }
    }
    char name[32];
    std::snprintf(name, sizeof(name), "%03d.png", i);
    std::ofstream(dir / "label" / name, std::ios::binary) << encode_png_image(label);
    std::ofstream(dir / "image" / name, std::ios::binary) << encode_png_image(image);
  }
  std::ofstream(dir / "classes.csv") << kColors;
}

std::string seg_spec(const std::filesystem::path& dir, const std::string& crop) {
  return "import images\n"
         "pipeline images = files(\"" +
         dir.string() + "/image/*.png\") | map(r => { image: r.path })\n" + "pipeline labels = files(\"" +
         dir.string() + "/label/*.png\") | map(r => { label: r.path })\n" +
         "pipeline p = zip(images, labels)\n"
         "  | map(r => {\n"
         "      pair = { image: read_png_rgb(r.image), label: read_png_rgb(r.label) } | " +
         crop +
         "\n"
         "      { image: convert_image_dtype(pair.image, f32),\n"
         "        label: one_hot_colors(pair.label, \"" +
         (dir / "classes.csv").string() +
         "\", classes = 4) }\n"
         "    })\n"
         "  | batch(3, drop_remainder = true)\n";
}

int count_op(const Plan& p, OpKind op) {
  int n = 0;
  for (const Stage& s : p.stages)
    if (s.fn)
      for (const Instr& in : s.fn->body) n += in.op == op;
  return n;
}

TEST(PngOneHotFusion, OptimizedPlanGivesTheLoweredPlansTensors) {
  testing::ScratchDir dir;
  write_pngs(dir.path(), 12);
  for (const char* crop :
       {"crop_or_pad(20, 16)", "crop_or_pad(40, 8)", "random_crop(10, 9, seed = 5)", "crop_or_pad(36, 30)"}) {
    SCOPED_TRACE(crop);
    const std::string text = seg_spec(dir.path(), crop);
    Plan lowered = testing::compiled_plan(text, "p");
    CompileOptions opt;
    std::vector<std::string> log;
    opt.passes.log = [&](const std::string& pass, bool changed, const Plan&) {
      if (changed) log.push_back(pass);
    };
    Plan optimized = testing::compiled_plan(text, "p", opt);
    EXPECT_NE(std::find(log.begin(), log.end(), "png_one_hot_fusion"), log.end());
    EXPECT_EQ(count_op(optimized, OpKind::OneHotColors), 0);
    EXPECT_EQ(count_op(optimized, OpKind::CropOrPad) + count_op(optimized, OpKind::RandomCrop) +
                  count_op(optimized, OpKind::CentralCrop),
              0);
    for (int threads : {1, 2}) {
      std::vector<Tensor> a = testing::run_tensors(lowered, 9, 1), b = testing::run_tensors(optimized, 9, threads);
      ASSERT_EQ(a.size(), b.size());
      ASSERT_EQ(a.size(), 8u);  // 4 batches, 2 fields
      for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equals(b[i])) << "tensor " << i;
    }
  }
}

TEST(PngOneHotFusion, LeavesOtherPlansAlone) {
  testing::ScratchDir dir;
  write_pngs(dir.path(), 3);
  auto plan = [&](const std::string& body) {
    return testing::compiled_plan(
        "pipeline p = files(\"" + dir.path().string() + "/label/*.png\")\n  | map(r => " + body + ")\n", "p");
  };
  const std::string csv = "\"" + (dir.path() / "classes.csv").string() + "\"";
  // The decoded label is used twice.
  Plan shared = plan("{ l = decode_png(read_file(r.path), channels = 3); { a: one_hot_colors(l, " + csv +
                     ", classes = 4), b: l } }");
  EXPECT_FALSE(png_one_hot_fusion(shared));
  // Channels as stored (maybe not RGB): one_hot_colors checks the pixels and reports its own error.
  Plan stored = plan("{ a: one_hot_colors(decode_png(read_file(r.path), channels = 0), " + csv + ", classes = 4) }");
  EXPECT_FALSE(png_one_hot_fusion(stored));
  Plan fused = plan("{ a: one_hot_colors(decode_png(read_file(r.path), channels = 3), " + csv + ", classes = 4) }");
  EXPECT_TRUE(png_one_hot_fusion(fused));
  EXPECT_FALSE(png_one_hot_fusion(fused)) << "a second run has nothing left to do";
  EXPECT_TRUE(verify_plan(fused).empty());
}

}  // namespace
}  // namespace pipec

// Convert-normalize fusion (compiler/passes/convert_normalize_fusion.h): which chains it fuses and
// which it leaves alone, and that the optimized plan gives exactly the tensors of the plan as lowered
// (-O0: the flip, convert_image_dtype and normalize one by one), on random JPEGs with random windows
// and flips, over seeds and thread counts.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "compiler/passes/convert_normalize_fusion.h"
#include "runtime/core/philox.h"
#include "runtime/image/encoders.h"
#include "runtime/plan/plan.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

// Random photos (a gradient under noise, so the JPEGs are neither flat nor pure noise) of sizes around
// 48x40, in two folders, as seed 003's blurred and sharp pairs.
void write_jpegs(const std::filesystem::path& dir, int n) {
  for (const char* sub : {"a", "b"}) std::filesystem::create_directories(dir / sub);
  for (int i = 0; i < n; ++i) {
    RandomStream st(5, static_cast<uint64_t>(i), 0, 0);
    const int64_t h = st.uniform_int(36, 60), w = st.uniform_int(30, 56);
    for (const char* sub : {"a", "b"}) {
      Tensor img = Tensor::empty(DType::U8, {h, w, 3});
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          for (int64_t k = 0; k < 3; ++k)
            img.raw()[(y * w + x) * 3 + k] =
                static_cast<uint8_t>(std::min<int64_t>(255, (x * 4 + y * 3 + k * 40) % 200 + st.uniform_int(0, 55)));
      char name[32];
      std::snprintf(name, sizeof(name), "%03d.jpg", i);
      std::ofstream(dir / sub / name, std::ios::binary) << encode_jpeg_image(img, 90);
    }
  }
}

// Seed 003's map over pairs with `body` making the result from `pair` (the two cropped images).
std::string pair_spec(const std::filesystem::path& dir, const std::string& crop, const std::string& body,
                      const std::string& tail = "") {
  return "import images\n"
         "pipeline as = files(\"" +
         dir.string() + "/a/*.jpg\") | map(r => { a: r.path })\n" + "pipeline bs = files(\"" + dir.string() +
         "/b/*.jpg\") | map(r => { b: r.path })\n" +
         "pipeline p = zip(as, bs)\n"
         "  | repeat(2)\n"
         "  | map(r => {\n"
         "      pair = { a: read_jpeg_rgb(r.a), b: read_jpeg_rgb(r.b) }" +
         crop + "\n      " + body + "\n    }, parallel = 2)\n" + tail;
}

int count_op(const Plan& p, OpKind op) {
  int n = 0;
  for (const Stage& s : p.stages)
    if (s.fn)
      for (const Instr& in : s.fn->body) n += in.op == op;
  return n;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

struct Case {
  const char* crop;
  const char* body;
  const char* tail;
  OpKind fused;
};

TEST(ConvertNormalizeFusion, OptimizedPlanGivesTheLoweredPlansTensors) {
  testing::ScratchDir dir;
  write_jpegs(dir.path(), 9);
  const Case cases[] = {
      // Seed 003: one random flip for both images of a pair, normalize to [-1, 1].
      {" | random_crop(32, 24) | random_flip_left_right", "normalize(convert_image_dtype(pair, f32), 0.5, 0.5)", "",
       OpKind::RandomFlipConvertNormalize},
      {" | random_crop(32, 24, seed = 9) | random_flip_up_down",
       "normalize(convert_image_dtype(pair, f32), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])", "",
       OpKind::RandomFlipConvertNormalize},
      {" | random_crop(20, 30) | flip_left_right", "convert_image_dtype(pair, f32)", "| batch(4)\n",
       OpKind::ConvertNormalize},
      // No crop: images of their own sizes, so no stacked rows to write into.
      {"", "normalize(convert_image_dtype(pair, f32), 0.25, 3.0)", "", OpKind::ConvertNormalize},
      {" | central_crop(0.5) | random_flip_left_right", "convert_image_dtype(pair, f32)", "",
       OpKind::RandomFlipConvertNormalize},
  };
  for (const Case& c : cases) {
    const std::string text = pair_spec(dir.path(), c.crop, c.body, c.tail);
    SCOPED_TRACE(text);
    Plan lowered = testing::compiled_plan(text, "p");
    CompileOptions opt;
    std::vector<std::string> log;
    opt.passes.log = [&](const std::string& pass, bool changed, const Plan&) {
      if (changed) log.push_back(pass);
    };
    Plan optimized = testing::compiled_plan(text, "p", opt);
    EXPECT_NE(std::find(log.begin(), log.end(), "convert_normalize_fusion"), log.end());
    EXPECT_EQ(count_op(optimized, c.fused), 2);
    for (OpKind gone : {OpKind::Normalize, OpKind::ConvertImageDtype, OpKind::RandomFlipLeftRight,
                        OpKind::RandomFlipUpDown, OpKind::FlipLeftRight})
      EXPECT_EQ(count_op(optimized, gone), 0) << op_name(gone);
    for (uint64_t seed : {0, 1, 7, 12345})
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << threads << " threads");
        std::vector<Tensor> a = testing::run_tensors(lowered, seed, 1),
                            b = testing::run_tensors(optimized, seed, threads);
        ASSERT_EQ(a.size(), b.size());
        ASSERT_GE(a.size(), 8u);
        for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bits(a[i], b[i])) << "tensor " << i;
      }
  }
}

// The two images of a pair flip together, fused or not: both fused ops draw from the random flip's
// stream (its op_id), so a pair of equal files stays equal.
TEST(ConvertNormalizeFusion, APairFlipsTogether) {
  testing::ScratchDir dir;
  write_jpegs(dir.path(), 6);
  for (int i = 0; i < 6; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "%03d.jpg", i);
    std::filesystem::copy_file(dir.path() / "a" / name, dir.path() / "b" / name,
                               std::filesystem::copy_options::overwrite_existing);
  }
  const std::string text = pair_spec(dir.path(), " | random_crop(32, 24) | random_flip_left_right",
                                     "normalize(convert_image_dtype(pair, f32), 0.5, 0.5)");
  CompileOptions opt;
  Plan optimized = testing::compiled_plan(text, "p", opt);
  ASSERT_EQ(count_op(optimized, OpKind::RandomFlipConvertNormalize), 2);
  std::vector<Tensor> t = testing::run_tensors(optimized, 3, 2);
  ASSERT_EQ(t.size(), 24u);
  for (size_t i = 0; i < t.size(); i += 2) EXPECT_TRUE(same_bits(t[i], t[i + 1])) << "element " << i / 2;
}

std::string map_ops(const Plan& p, size_t stage) { return testing::body_ops(*p.stages.at(stage).fn); }

TEST(ConvertNormalizeFusion, FusesExactlyTheChainsItShould) {
  auto plan = [](const std::string& body, const std::string& tail = "") {
    return testing::compiled_plan(
        "import images\npipeline p = files(\"img/*.jpg\")\n  | map(r => " + body + ")\n" + tail, "p");
  };
  auto fused = [](Plan p) {
    EXPECT_TRUE(convert_normalize_fusion(p));
    EXPECT_TRUE(verify_plan(p).empty());
    EXPECT_FALSE(convert_normalize_fusion(p)) << "a second run has nothing left to do";
    return p;
  };
  const std::string img = "random_crop(read_jpeg_rgb(r.path), 8, 8)";
  // The whole chain, the random flip's op_id and seed kept.
  Plan lowered =
      plan("{ y: normalize(convert_image_dtype(random_flip_left_right(" + img + ", seed = 7), f32), 0.5, 0.5) }");
  int64_t flip_op = -1;
  for (const Instr& in : lowered.stages[1].fn->body)
    if (in.op == OpKind::RandomFlipLeftRight) flip_op = in.attrs.at("op_id").i;
  ASSERT_GE(flip_op, 0);
  Plan p = fused(testing::copy_plan(lowered));
  EXPECT_EQ(map_ops(p, 1), "decode_jpeg random_crop const const random_flip_convert_normalize");
  for (const Instr& in : p.stages[1].fn->body)
    if (in.op == OpKind::RandomFlipConvertNormalize) {
      EXPECT_EQ(in.attrs.at("flip").s, "left_right");
      EXPECT_EQ(in.attrs.at("op_id").i, flip_op);
      EXPECT_EQ(in.attrs.at("seed").i, 7);
      EXPECT_EQ(in.operands.size(), 3u);
    }
  // A fixed flip up-down, per-channel mean and std.
  p = fused(plan("{ y: normalize(convert_image_dtype(flip_up_down(" + img + "), f32), [1, 2, 3], [4, 5, 6]) }"));
  EXPECT_EQ(map_ops(p, 1), "decode_jpeg random_crop const const convert_normalize");
  // A convert without normalize; without a flip.
  p = fused(plan("{ y: convert_image_dtype(" + img + ", f32) }"));
  EXPECT_EQ(map_ops(p, 1), "decode_jpeg random_crop convert_normalize");
  // The flipped image is read twice: it stays, the convert and normalize read it.
  p = fused(plan("{ f = random_flip_left_right(" + img +
                 "); { y: normalize(convert_image_dtype(f, f32), 0.5, 0.5), z: f } }"));
  EXPECT_EQ(map_ops(p, 1), "decode_jpeg random_crop random_flip_left_right const const convert_normalize");
  // The converted image is read twice: the flip and convert fuse, the normalize reads their result.
  p = fused(plan("{ c = convert_image_dtype(random_flip_left_right(" + img +
                 "), f32); { y: normalize(c, 0.5, 0.5), z: c } }"));
  EXPECT_EQ(map_ops(p, 1), "decode_jpeg random_crop random_flip_convert_normalize const const normalize");
  // Not u8 to f32: u16 pixels, a convert to f16, a normalize of f32 pixels not converted here.
  for (const std::string& body : std::vector<std::string>{
           "{ y: normalize(convert_image_dtype(decode_png(read_file(r.path), dtype = u16), f32), 0.5, 0.5) }",
           "{ y: convert_image_dtype(" + img + ", f16) }", "{ y: normalize(resize(" + img + ", 4, 4), 0.5, 0.5) }",
           "{ y: random_flip_left_right(" + img + ") }"}) {
    SCOPED_TRACE(body);
    Plan q = plan(body);
    EXPECT_FALSE(convert_normalize_fusion(q));
  }
  // A map the loop nests compile (u8 batches of a known shape): fusing would make it interpreted.
  Plan compiled = plan("{ img: " + img + " }",
                       "  | batch(2, drop_remainder = true)\n  | map(b => { y: normalize(convert_image_dtype(b.img, "
                       "f32), 0.5, 0.5) })\n");
  EXPECT_FALSE(convert_normalize_fusion(compiled));
  EXPECT_EQ(map_ops(compiled, 3), "convert_image_dtype const const normalize");
}

}  // namespace
}  // namespace pipec

// The optimizer on the command line: explain --passes, -O0, --disable-pass, and `pipec run` giving the
// same elements optimized and at -O0.
#include <gtest/gtest.h>

#include "runtime/io/npy.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
namespace fs = std::filesystem;

const char* kSpec =
    "pipeline p = range(30)\n"
    "  | map(r => { x: f32(r.value) * 2.0 + random_uniform([2]) })\n"
    "  | batch(4)\n";

TEST(PassesCli, ExplainShowsTheOptimizedPlanAndO0TheLoweredOne) {
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto opt = run_pipec({"explain", (d / "p.pipe").string()});
  ASSERT_EQ(opt.exit_code, 0) << opt.err;
  EXPECT_NE(opt.out.find("map(#1, per_row = 4, fn = map@1)"), std::string::npos) << opt.out;
  EXPECT_NE(opt.out.find("prefetch(#2, size = auto)"), std::string::npos) << opt.out;
  auto o0 = run_pipec({"explain", "-O0", (d / "p.pipe").string()});
  ASSERT_EQ(o0.exit_code, 0) << o0.err;
  EXPECT_NE(o0.out.find("#1 map(#0, fn = map@1)"), std::string::npos) << o0.out;
  EXPECT_EQ(o0.out.find("prefetch"), std::string::npos) << o0.out;
  auto off = run_pipec({"explain", "--disable-pass=vectorize_map_after_batch", "--disable-pass", "prefetch_injection",
                        "--disable-pass=map_batch_fusion", (d / "p.pipe").string()});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  // The plans agree; only the optimized run lists the kernels it would compile.
  EXPECT_EQ(off.out.substr(0, off.out.find("kernels:\n")), o0.out);
  EXPECT_NE(off.out.find("kernels:\n"), std::string::npos);
}

TEST(PassesCli, ExplainPassesPrintsThePlanAfterEachPass) {
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto r = run_pipec({"explain", "--passes", (d / "p.pipe").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("== lowered ==\npipeline p\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("== after map_fusion: unchanged =="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== after vectorize_map_after_batch ==\npipeline p\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== after prefetch_injection ==\n"), std::string::npos) << r.out;
}

TEST(PassesCli, AnUnknownPassIsAUsageErrorListingTheNames) {
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  for (const char* cmd : {"explain", "run"}) {
    auto r = run_pipec({cmd, "--disable-pass=map_fuson", (d / "p.pipe").string()});
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("unknown pass `map_fuson`"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("map_fusion"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("vectorize_map_after_batch"), std::string::npos) << r.err;
  }
  auto help = run_pipec({"run", "--help"});
  EXPECT_NE(help.out.find("--disable-pass NAME"), std::string::npos);
  EXPECT_NE(help.out.find("-O0"), std::string::npos);
}

TEST(PassesCli, RunOptimizedAndO0WriteTheSameElements) {
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto a = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "opt").string(), "--quiet", "--seed", "4"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b =
      run_pipec({"run", "-O0", (d / "p.pipe").string(), "--output", (d / "ref").string(), "--quiet", "--seed", "4"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  int compared = 0;
  for (int i = 0; i < 8; ++i) {
    std::string e = "00000" + std::to_string(i);
    fs::path want = d / "ref" / e / "x.npy", got = d / "opt" / e / "x.npy";
    ASSERT_EQ(fs::exists(want), fs::exists(got)) << e;
    if (!fs::exists(want)) continue;
    EXPECT_TRUE(read_npy(got.string()).equals(read_npy(want.string()))) << e;
    ++compared;
  }
  EXPECT_EQ(compared, 8);  // 30 elements in batches of 4: 7 full and a short one
}

// The chess example (seed 002) on a small copy of its data: the optimized run vectorizes the map after
// the batch and must give the same boards, flags and scores, also after the repeat starts over. The
// variant with the repeat right after the shuffle (batches span epochs) fuses the shuffle with the
// repeat and still vectorizes the map (it draws nothing), with the same results as its -O0 run.
TEST(PassesCli, ChessExampleMatchesO0AcrossEpochs) {
  ScratchDir d;
  std::string make = testing::read_all(fs::path(PIPEC_SOURCE_DIR) / "examples/chess/make_data.pipe");
  size_t at = make.find("300_000");
  ASSERT_NE(at, std::string::npos);
  make.replace(at, 7, "1_500");
  write_file(d / "make_data.pipe", make);
  auto m = run_pipec({"run", (d / "make_data.pipe").string(), "--quiet"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  for (const char* spec : {"chess.pipe", "chess_repeat_first.pipe"}) {
    SCOPED_TRACE(spec);
    fs::copy_file(fs::path(PIPEC_SOURCE_DIR) / "examples/chess" / spec, d / spec);
    auto plan = run_pipec({"explain", (d / spec).string()});
    ASSERT_EQ(plan.exit_code, 0) << plan.err;
    EXPECT_NE(plan.out.find("per_row = 512"), std::string::npos) << plan.out;
    if (std::string(spec) == "chess_repeat_first.pipe") {
      EXPECT_NE(plan.out.find("shuffle_repeat("), std::string::npos) << plan.out;
    }
    const fs::path out = d / (std::string(spec) + ".out");
    for (const char* level : {"-O1", "-O0"}) {
      auto r =
          run_pipec({"run", level, (d / spec).string(), "--take", "5", "--output", (out / level).string(), "--quiet"});
      ASSERT_EQ(r.exit_code, 0) << level << r.err;
    }
    int compared = 0;
    // 1,500 positions, 1,313 of them in the seven training files: 2.6 batches of 512 an epoch, so 5 batches
    // span 2 or 3 epochs.
    for (int i = 0; i < 5; ++i)
      for (const char* field : {"board", "flags", "score"}) {
        std::string e = "00000" + std::to_string(i);
        Tensor want = read_npy((out / "-O0" / e / (std::string(field) + ".npy")).string());
        Tensor got = read_npy((out / "-O1" / e / (std::string(field) + ".npy")).string());
        EXPECT_TRUE(got.equals(want)) << e << " " << field;
        ++compared;
      }
    EXPECT_EQ(compared, 15);
  }
}

}  // namespace
}  // namespace pipec

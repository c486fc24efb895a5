// one_hot_colors with its colours in a class_dict.csv: `pipec run` reads the file before compiling, so
// the map runs as a JIT kernel, with the interpreter's values (--no-jit); a file that cannot be read
// leaves the map on the interpreter, which reports the file when the op runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/io/npy.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
namespace fs = std::filesystem;

const char* kSpec =
    "pipeline p = range(6) | map(r => {\n"
    "    px = reshape(u8([0, 0, 0, 255, 255, 255, 1, 2, 3, 7, 7, 7]) + u8(r.value % 2), [2, 2, 3])\n"
    "    { label: one_hot_colors(px, \"colours.csv\", classes = 4) }\n"
    "  })\n";

TEST(ColourFileRun, ReadBeforeCompilingSoTheMapIsCompiledWithTheInterpretersValues) {
  ScratchDir d;
  std::ofstream(d / "p.pipe") << kSpec;
  std::ofstream(d / "colours.csv") << "name,r,g,b\nvoid,0,0,0\nsky,1,1,1\nroad,1,2,3\nwhite,255,255,255\n";
  auto jit = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "jit").string(), "--threads", "2"});
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  EXPECT_NE(jit.err.find("[llvm-jit]"), std::string::npos) << jit.err;
  auto ref = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "ref").string(), "--no-jit", "-q"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  for (int e = 0; e < 6; ++e) {
    const std::string f = "00000" + std::to_string(e) + "/label.npy";
    Tensor a = read_npy((d / "jit" / f).string()), b = read_npy((d / "ref" / f).string());
    EXPECT_TRUE(a.equals(b)) << f;
    float sum = 0;
    for (int64_t i = 0; i < a.num_elements(); ++i) sum += a.data<float>()[i];
    EXPECT_EQ(sum, e % 2 == 0 ? 3.0f : 2.0f) << f;  // pixels of a listed colour: 3 in even rows, 2 in odd
  }
}

// explain shows what a run compiles: the colours in the instruction and the map's kernel.
TEST(ColourFileRun, ExplainShowsTheMapCompiled) {
  ScratchDir d;
  std::ofstream(d / "p.pipe") << kSpec;
  std::ofstream(d / "colours.csv") << "name,r,g,b\nvoid,0,0,0\nsky,1,1,1\nroad,1,2,3\nwhite,255,255,255\n";
  auto r = run_pipec({"explain", (d / "p.pipe").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("colors=[[0, 0, 0], [1, 1, 1], [1, 2, 3], [255, 255, 255]]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#1 map: compiled"), std::string::npos) << r.out;
}

// The same in a flat_map's pipeline: its map is compiled too.
TEST(ColourFileRun, AFlatMapsInnerMapIsCompiledToo) {
  ScratchDir d;
  std::ofstream(d / "p.pipe")
      << "pipeline p = range(1, 4) | flat_map(e => range(e.value) | map(r => {\n"
         "    px = reshape(u8([0, 0, 0, 255, 255, 255, 1, 2, 3, 7, 7, 7]) + u8(r.value % 2), [2, 2, 3])\n"
         "    { label: one_hot_colors(px, \"colours.csv\", classes = 4) }\n"
         "  }))\n";
  std::ofstream(d / "colours.csv") << "name,r,g,b\nvoid,0,0,0\nsky,1,1,1\nroad,1,2,3\nwhite,255,255,255\n";
  auto jit = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "jit").string()});
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  EXPECT_NE(jit.err.find("[each element: #1 map llvm-jit]"), std::string::npos) << jit.err;
  auto ref = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "ref").string(), "--no-jit", "-q"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  for (int e = 0; e < 6; ++e) {  // 1 + 2 + 3 elements
    const std::string f = "00000" + std::to_string(e) + "/label.npy";
    EXPECT_TRUE(read_npy((d / "jit" / f).string()).equals(read_npy((d / "ref" / f).string()))) << f;
  }
  EXPECT_FALSE(fs::exists(d / "jit" / "000006"));
}

TEST(ColourFileRun, AMissingFileIsReportedByTheRunNotTheCompiler) {
  ScratchDir d;
  std::ofstream(d / "p.pipe") << kSpec;
  auto r = run_pipec({"run", (d / "p.pipe").string(), "-q"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("colours.csv"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p.pipe:3:"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pipec

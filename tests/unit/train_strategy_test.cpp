// The strategy entry on a machine without a GPU: single() trains as written; mirrored(...) falls back
// to one CPU replica with exactly one warning naming where it is written and why.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/unit/cli_util.h"

using pipec::testing::read_all;
using pipec::testing::run_pipec;
using pipec::testing::ScratchDir;
using pipec::testing::write_file;
namespace fs = std::filesystem;

namespace {

std::string spec_with(const std::string& strategy) {
  return R"(pipeline data = range(128)
  | map(r => {
      x = random_uniform([4], -1.0, 1.0, seed = 1)
      { x, y: [sum(x)] }
    })
  | batch(32, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), )" +
         strategy + R"(, steps = 3 }
)";
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A CUDA library that does not exist: the machine has no usable GPU whatever it has.
struct NoGpu {
  NoGpu() { setenv("PIPEC_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1); }
  ~NoGpu() { unsetenv("PIPEC_CUDA_LIBRARY"); }
};

}  // namespace

TEST(TrainStrategy, MirroredWithoutAGpuTrainsOneCpuReplicaWithOneWarning) {
  NoGpu no_gpu;
  ScratchDir d;
  write_file(d / "m.pipe", spec_with("strategy = mirrored(devices = all)"));
  auto r = run_pipec({"run", (d / "m.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_of(r.err, "warning:"), 1u) << r.err;
  // Where the strategy is written (line 8, column 89) and why.
  EXPECT_NE(
      r.err.find(
          "m.pipe:8:89: warning: strategy mirrored trains one replica on the CPU: this machine has no usable GPU ("),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("train fit: 3 steps (96 examples)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("strategy mirrored: one replica trained on the CPU"), std::string::npos) << r.err;
  // The same with a device list.
  write_file(d / "l.pipe", spec_with("strategy = mirrored(devices = [0, 1])"));
  auto l = run_pipec({"run", (d / "l.pipe").string(), "-q"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(count_of(l.err, "warning: strategy mirrored trains one replica on the CPU"), 1u) << l.err;
}

TEST(TrainStrategy, SingleTrainsWithoutAWarningAndLikeNoStrategy) {
  NoGpu no_gpu;
  ScratchDir d;
  write_file(d / "s.pipe", spec_with("strategy = single()"));
  write_file(d / "n.pipe", spec_with("epochs = 1"));
  auto s = run_pipec({"run", (d / "s.pipe").string(), "--stats-json", (d / "s.json").string()});
  auto m = run_pipec({"run", (d / "n.pipe").string(), "--steps", "3", "--stats-json", (d / "n.json").string()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(count_of(s.err, "warning"), 0u) << s.err;
  EXPECT_EQ(s.err.find("strategy"), std::string::npos) << s.err;
  // single() is the default: the same losses as a block without a strategy.
  std::string a = read_all(d / "s.json"), b = read_all(d / "n.json");
  EXPECT_EQ(a.substr(a.find("\"losses\"")), b.substr(b.find("\"losses\"")));
}

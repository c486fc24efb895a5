// The strategy entry on a machine without a GPU: single() trains as written; mirrored(devices = all)
// trains one CPU replica; a count or a list of devices trains that many replicas on threads
// (runtime/train/parallel; tests/unit/train_data_parallel_test.cpp tests what they compute).
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

// mirrored(devices = all) on a machine without a GPU: one CPU replica, so that the spec gives the
// results it gives with one device (the same losses as single()), and nothing to warn about.
TEST(TrainStrategy, MirroredOverAllDevicesWithoutAGpuTrainsOneCpuReplica) {
  NoGpu no_gpu;
  ScratchDir d;
  write_file(d / "m.pipe", spec_with("strategy = mirrored(devices = all)"));
  write_file(d / "s.pipe", spec_with("strategy = single()"));
  auto r = run_pipec({"run", (d / "m.pipe").string(), "--stats-json", (d / "m.json").string()});
  auto s = run_pipec({"run", (d / "s.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(count_of(r.err, "warning:"), 0u) << r.err;
  EXPECT_EQ(r.err.find("data-parallel"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("train fit: 3 steps (96 examples)"), std::string::npos) << r.err;
  std::string a = read_all(d / "m.json"), b = read_all(d / "s.json");
  EXPECT_EQ(a.substr(a.find("\"losses\"")), b.substr(b.find("\"losses\"")));
}

// A device list without a GPU: as many CPU replicas, with one note at the strategy's place saying so.
TEST(TrainStrategy, MirroredOverListedGpusWithoutAGpuSaysItTrainsCpuReplicas) {
  NoGpu no_gpu;
  ScratchDir d;
  write_file(d / "l.pipe", spec_with("strategy = mirrored(devices = [0, 1])"));
  // The reference executor: the replicas' threads each running oneDNN's OpenMP regions would be
  // reported by the TSan job (Debian's libgomp is not instrumented).
  auto l = run_pipec({"run", (d / "l.pipe").string(), "--executor", "reference"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  // Where the strategy is written (line 8, column 89) and why.
  EXPECT_EQ(count_of(l.err, "l.pipe:8:89: note: strategy mirrored names GPUs, and this machine has no usable GPU"), 1u)
      << l.err;
  EXPECT_NE(l.err.find(": 2 replicas on the CPU"), std::string::npos) << l.err;
  EXPECT_NE(l.err.find("data-parallel, 2 replicas"), std::string::npos) << l.err;
}

// A batch that does not split over the replicas is refused before the first step.
TEST(TrainStrategy, MirroredRefusesABatchThatDoesNotSplit) {
  NoGpu no_gpu;
  ScratchDir d;
  write_file(d / "b.pipe", spec_with("strategy = mirrored(devices = 3)"));
  auto r = run_pipec({"run", (d / "b.pipe").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("b.pipe:8:89: error: a batch of 32 examples cannot be split evenly over 3 replicas"),
            std::string::npos)
      << r.err;
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

// `to(gpu)` on a machine without a usable GPU (PIPEC_CUDA_LIBRARY points at a library that does not
// exist, so this holds on GPU machines too): the run warns once, saying why, runs every stage on the
// CPU with the interpreter's values, and the summary says so; `--device gpu` is an error instead.
#include <cstdlib>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "runtime/io/npy.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;

const char* kSpec =
    "pipeline p = range(100)\n"
    "  | to(gpu)\n"
    "  | map(r => { x: f32(r.value) * 0.5, u: random_uniform([2], seed = 3) })\n"
    "  | batch(10)\n";

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

struct NoCudaEnv {
  NoCudaEnv() { setenv("PIPEC_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1); }
  ~NoCudaEnv() { unsetenv("PIPEC_CUDA_LIBRARY"); }
};

TEST(GpuFallback, ToGpuWarnsOnceAndRunsOnTheCpu) {
  NoCudaEnv env;
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "gpu").string(), "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "warning: to(gpu): no GPU"), 1) << r.err;
  EXPECT_NE(r.err.find("p.pipe:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/libcuda.so.1"), std::string::npos) << r.err;
  // The summary's device column: every stage on the CPU.
  EXPECT_NE(r.err.find("device"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("gpu: "), std::string::npos) << r.err;
  EXPECT_GE(count(r.err, "  cpu\n"), 4) << r.err;

  // Same values as a run that never asked for the GPU.
  auto cpu = run_pipec({"run", (d / "p.pipe").string(), "--output", (d / "cpu").string(), "--device", "cpu", "-q"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(cpu.err.find("warning"), std::string::npos) << cpu.err;
  for (const char* f : {"000000/x.npy", "000009/x.npy", "000004/u.npy"})
    EXPECT_TRUE(read_npy((d / "gpu" / f).string()).equals(read_npy((d / "cpu" / f).string()))) << f;
}

// Under a repeat() the stages after to(gpu) are built when the first element is pulled, after the
// pipeline's own warnings were printed: the warning still comes, once, however many epochs rebuild
// them (it was lost, so a GPU run whose map fell back to the CPU said nothing).
TEST(GpuFallback, AWarningRaisedWhileTheRunGoesOnIsPrintedOnce) {
  NoCudaEnv env;
  ScratchDir d;
  write_file(d / "p.pipe",
             "pipeline p = range(10)\n"
             "  | to(gpu)\n"
             "  | map(r => { y: r.value * 2 })\n"
             "  | batch(5)\n"
             "  | repeat()\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--take", "7", "--threads", "2", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "warning: to(gpu): no GPU"), 1) << r.err;
  EXPECT_NE(r.err.find("p.pipe:2:"), std::string::npos) << r.err;
}

TEST(GpuFallback, DeviceGpuIsAnErrorNamingWhy) {
  NoCudaEnv env;
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--device", "gpu", "-q"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--device gpu: no GPU to run on"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libcuda.so.1"), std::string::npos) << r.err;
}

TEST(GpuFallback, BadDeviceValueIsAUsageError) {
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--device", "tpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--device: must be auto, cpu or gpu, not `tpu`"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pipec

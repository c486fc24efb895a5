// The memory plan `pipec run` makes before step 1 (runtime/train/loop/train_memory_plan.h) against the
// resident peak the process then reaches, on each example's train block: within 10%. Shrunk with -D so
// that the three run in well under a minute on two cores, but kept large enough that the model's memory
// (its weights, activations, kernels and batches) is several times the process's fixed part, or the
// 10% would say little. The peak is the child's ru_maxrss as wait4 reports it, measured here, not read
// from pipec. Label `memory`: the sanitizer jobs leave it out (scripts/sanitize.sh), where resident
// memory is mostly the sanitizer's own.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::read_all;
using testing::ScratchDir;

struct Run {
  int exit_code = -1;
  int64_t peak_resident_bytes = 0;  // ru_maxrss of the child
  std::string err;
};

// `pipec ARGS...` in `dir`, stdout and stderr to files there; its peak resident memory from wait4.
Run run_pipec_measured(const fs::path& dir, const std::vector<std::string>& args) {
  const fs::path out = dir / "pipec.out", err = dir / "pipec.err";
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) _exit(126);
    std::vector<std::string> all{PIPEC_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(PIPEC_BINARY, argv.data());
    _exit(127);
  }
  Run r;
  int status = 0;
  struct rusage usage {};
  if (pid > 0 && wait4(pid, &status, 0, &usage) == pid) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.peak_resident_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
  }
  r.err = read_all(err);
  return r;
}

void copy_example(const std::string& example, const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(fs::path(PIPEC_SOURCE_DIR) / "examples" / example))
    if (e.path().extension() == ".pipe" || e.path().extension() == ".csv")
      fs::copy_file(e.path(), dir / e.path().filename());
}

// Makes the example's sample data (make_data.pipe with `data_defines`), trains `spec` with `train_args`
// and holds the printed plan against the measured peak.
void expect_plan_within_ten_percent(const std::string& example, const std::string& spec,
                                    const std::vector<std::string>& data_defines,
                                    const std::vector<std::string>& train_args) {
  ScratchDir d;
  copy_example(example, d.path());
  std::vector<std::string> make{"run", "make_data.pipe", "-q"};
  make.insert(make.end(), data_defines.begin(), data_defines.end());
  const Run data = run_pipec_measured(d.path(), make);
  ASSERT_EQ(data.exit_code, 0) << data.err;

  // Two threads on any machine: the pipeline's buffers start at sizes that follow the thread count.
  std::vector<std::string> args{"run", spec, "--threads", "2", "--stats-json", "stats.json"};
  args.insert(args.end(), train_args.begin(), train_args.end());
  const Run run = run_pipec_measured(d.path(), args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(read_all(d / "stats.json"));
  const nlohmann::json& memory = j.at("memory");
  const int64_t planned = memory.at("planned_bytes").get<int64_t>();
  const int64_t process = memory.at("parts").at("process").get<int64_t>();
  const int64_t peak = run.peak_resident_bytes;
  const std::string figures = "planned " + std::to_string(planned) + " bytes, peak resident " + std::to_string(peak) +
                              " bytes\n" + memory.dump(2) + "\n" + run.err;
  // The model's part dominates the process's fixed part, so that 10% of the whole measures the model's.
  EXPECT_GE(planned - process, 3 * process) << figures;
  EXPECT_LE(peak, planned + planned / 10) << figures;
  EXPECT_GE(peak, planned - planned / 10) << figures;
  std::printf("%s: planned %.1f MB, peak resident %.1f MB (%+.1f%%)\n", example.c_str(), planned / 1e6, peak / 1e6,
              100.0 * static_cast<double>(peak - planned) / static_cast<double>(planned));
}

// 2,048 positions a step: activations of 221 MB, the prefetched batches of 13 MB each, and the
// evaluation on 256 held-out positions after the last step.
TEST(MemoryPlan, ChessWithinTenPercentOfThePeak) {
  expect_plan_within_ten_percent("chess", "chess.pipe", {"-D", "RECORDS=8_192"},
                                 {"-D", "BATCH=2048", "-D", "HELD_OUT=256", "--steps", "2"});
}

// 192x192 images in batches of 3: activations of 260 MB and batches of 15.5 MB (one-hot labels of 32
// classes), of which the input pipeline holds several.
TEST(MemoryPlan, SegmentationWithinTenPercentOfThePeak) {
  expect_plan_within_ten_percent("segmentation", "segmentation.pipe", {"-D", "SAMPLES=6", "-D", "H=200", "-D", "W=200"},
                                 {"-D", "SIZE=192", "--steps", "2"});
}

// 64x64 patches in batches of 4, mixed_fp16: 126 MB of weights and Adam's slots, 94 MB of them reordered
// for oneDNN, activations of 119 MB.
TEST(MemoryPlan, DeblurWithinTenPercentOfThePeak) {
  expect_plan_within_ten_percent("deblur", "deblur.pipe", {"-D", "PAIRS=4", "-D", "H=96", "-D", "W=128"},
                                 {"-D", "PATCH=64", "-D", "BATCH=4", "--steps", "2"});
}

}  // namespace
}  // namespace pipec

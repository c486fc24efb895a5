// What the GPU-vs-interpreter tests share: which device the "GPU" side runs on, a plan with every map
// moved after to(gpu), NVRTC compiling its generated kernels, one run of a plan collected as elements,
// and the counts each test prints for tests/gpu/run.sh's summary.
//
// Modes. On a machine with a GPU every test needs it: the GPU side runs with --device gpu, and every map
// with a kernel must run there. Without one a test fails, saying why, unless PIPEC_GPU_DRY_RUN=1
// (run.sh sets it when it finds no GPU): then the GPU side runs with --device auto, which falls back
// to the interpreter, so the plans, the generated kernels (compiled by NVRTC for compute_90), the runs
// and the comparisons are exercised on any machine. A dry run proves nothing about the GPU itself, and
// each test's summary line says "dry run".
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/exec/pipeline_run.h"
#include "runtime/plan/plan.h"
#include "tests/difftest/compare_outputs.h"

namespace pipec::gputest {

bool dry_run();

/// Where the GPU side runs: the GPU (policy Gpu, its compute capability), or in a dry run the
/// fallback (policy Auto, compute_90 for the NVRTC check; with no to(gpu) stage in a plan, Auto does
/// not even look for a GPU). Null after a test failure saying why when there is no GPU and this is not
/// a dry run.
struct GpuSide {
  DevicePolicy policy = DevicePolicy::Gpu;
  int arch = 90;
  bool real = true;  // a GPU is present
};
std::optional<GpuSide> gpu_side_or_fail();

/// Marks the input of every map stage as on the GPU, as if a to(gpu) stood before each map, and
/// generates the kernels (attach_gpu_kernels). Maps the generator cannot lower then read from the CPU
/// again (Stage::gpu keeps why), since --device gpu would refuse them. Returns the number of maps.
int move_every_map_to_gpu(Plan& plan);

/// The two plans each case is checked in: as lowered, and after the optimizer's passes (what `pipec
/// run` runs: maps moved after their batch run per row, maps fused), each with every map after
/// to(gpu). Names them "lowered" and "optimized".
std::vector<std::pair<std::string, Plan>> lowered_and_optimized(const Plan& lowered);

/// Counts over the plans and runs of one test, printed as one line that run.sh collects:
///   [ gpu-stats ] NAME: cases C, maps M, kernels K (compiled N), ran on the GPU G, ... (dry run)
struct GpuStats {
  int64_t cases = 0;
  int64_t maps = 0;
  int64_t kernels = 0;                         // maps the generator lowered
  int64_t compiled = 0;                        // kernels NVRTC compiled
  int64_t ran_on_gpu = 0;                      // map stages whose run said "gpu: ..."
  int64_t compared = 0;                        // elements compared
  int64_t run_errors = 0;                      // cases where both sides failed alike
  std::string last_error;                      // the interpreter's error in the last of those
  std::map<std::string, int64_t> unsupported;  // why a map stayed on the CPU -> how many
  void print(const std::string& name, bool real_gpu) const;
};

/// Compiles every generated kernel of `plan` with NVRTC for `arch`, the way the runtime does (same
/// options, same disk cache, so the run that follows finds them compiled). A failure adds a test
/// failure with NVRTC's log and `context` (e.g. the spec). Counts kernels, compiled kernels and the
/// reasons for maps without one into `stats`. Missing NVRTC fails unless PIPEC_ALLOW_NO_NVRTC=1.
void compile_kernels(const Plan& plan, int arch, const std::string& context, GpuStats& stats);

/// One run of `plan` on `device`: every element with its fields sorted by name (what
/// difftest::compare_outputs takes), or the error; and where each stage ran.
struct SideRun {
  difftest::RunOutput out;
  std::vector<std::string> stage_device;
};
SideRun run_side(const Plan& plan, DevicePolicy device, const std::string& spec_dir, std::optional<int64_t> take,
                 uint64_t seed = 7);

/// Runs `plan` on the GPU side and on the interpreter (--device cpu) and compares them within the
/// differential tests' ulp bounds (tests/difftest/compare_outputs.h). A difference adds a failure
/// naming `what`, the element, field and index, followed by `context`. Returns the number of map
/// stages that ran on the GPU.
int compare_gpu_with_interpreter(const Plan& plan, const GpuSide& side, const std::string& spec_dir,
                                 std::optional<int64_t> take, const std::string& what, const std::string& context,
                                 GpuStats& stats);

}  // namespace pipec::gputest

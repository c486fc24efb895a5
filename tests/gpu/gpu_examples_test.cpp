// Every map of every example, moved after to(gpu), against the interpreter.
//
// The examples with a make_data.pipe (chess, deblur, segmentation) and bench/gpu/chess_gpu.pipe, each
// pipeline that is not a sink, the first few elements, as lowered and as optimized (maps moved after
// their batch run on its rows: the first GPU run found that path computing one row per batch). Their data must exist
// (tests/gpu/run.sh makes it with each make_data.pipe first); a missing data set fails, naming the command that makes
// it. The repository is the current folder, or $PIPEC_GPU_SOURCE_DIR.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/lower/lower.h"
#include "compiler/sema/program.h"
#include "tests/gpu/gpu_harness.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

fs::path source_dir() {
  if (const char* v = std::getenv("PIPEC_GPU_SOURCE_DIR"); v && *v) return v;
  return fs::current_path();
}

/// The example specs that come with their data maker, and the GPU benchmark's chess spec.
std::vector<fs::path> example_specs(const fs::path& root) {
  std::vector<fs::path> specs;
  for (const auto& dir : fs::directory_iterator(root / "examples")) {
    if (!dir.is_directory() || !fs::exists(dir.path() / "make_data.pipe")) continue;
    for (const auto& f : fs::directory_iterator(dir.path()))
      if (f.path().extension() == ".pipe" && f.path().filename() != "make_data.pipe") specs.push_back(f.path());
  }
  specs.push_back(root / "bench/gpu/chess_gpu.pipe");
  std::sort(specs.begin(), specs.end());
  return specs;
}

bool writes(const Plan& plan) {
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::Write) return true;
  return false;
}

TEST(GpuExamples, EveryExampleMapAfterToGpuGivesTheInterpretersValues) {
  auto side = gputest::gpu_side_or_fail();
  if (!side) return;
  const fs::path root = source_dir();
  ASSERT_TRUE(fs::exists(root / "examples"))
      << "no examples/ in " << root << " (run from the repository, or set PIPEC_GPU_SOURCE_DIR)";
  gputest::GpuStats stats;
  for (const fs::path& spec : example_specs(root)) {
    auto program = check_file(spec.string());
    std::ostringstream diags;
    program->diags.print(diags, false);
    ASSERT_FALSE(program->diags.has_errors() || !program->io_error.empty())
        << spec << ": " << program->io_error << diags.str();
    for (const auto& d : program->main().decls) {
      if (d->kind != DeclKind::Pipeline) continue;
      Plan plan = lower_pipeline(*program, *d);
      if (writes(plan)) continue;  // a sink writes files; the data makers are not the subject here
      auto problems = verify_plan(plan);
      ASSERT_TRUE(problems.empty()) << spec << " pipeline " << d->name << ": " << problems[0];
      const std::string what = fmt::format("{} pipeline {}", fs::relative(spec, root).string(), d->name);
      const std::string make = fmt::format("(its data comes from `pipec run {}`)",
                                           fs::relative(spec.parent_path() / "make_data.pipe", root).string());
      for (auto& [form, p] : gputest::lowered_and_optimized(plan)) {
        const std::string case_name = what + " (" + form + ")";
        ++stats.cases;
        stats.maps += gputest::move_every_map_to_gpu(p);
        gputest::compile_kernels(p, side->arch, case_name, stats);
        int64_t errors_before = stats.run_errors;
        // Three elements: for a pipeline of batches, rows past the first of a batch are compared too.
        gputest::compare_gpu_with_interpreter(p, *side, spec.parent_path().string(), 3, case_name, make, stats);
        // Both sides failing alike is agreement for random specs, but an example must run.
        EXPECT_EQ(stats.run_errors, errors_before) << case_name << " does not run " << make << ": " << stats.last_error;
      }
    }
  }
  stats.print("examples, every map after to(gpu)", side->real);
  EXPECT_GT(stats.compared, 0);
  EXPECT_GT(stats.kernels, 0) << "the generator lowered no map of any example";
  if (side->real) {
    EXPECT_GT(stats.ran_on_gpu, 0);
  }
}

}  // namespace
}  // namespace pipec

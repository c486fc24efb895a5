// The differential tests' random pipelines (tests/difftest/spec_generator.h) with every map moved after
// to(gpu), against the interpreter: casts between every dtype, arithmetic, bit ops, math functions,
// indexing, reshapes, reductions and the random ops, on data with NaN, infinities, -0.0 and extreme
// integers. Maps the CUDA generator cannot lower stay on the CPU (the summary line counts them and
// says why); the ones it lowers must compile with NVRTC, run on the GPU and give the interpreter's
// values within the differential tests' ulp bounds.
//
//   PIPEC_GPU_RANDOM_SEEDS (default 100) cases from seed PIPEC_GPU_RANDOM_FIRST (default 1);
//   PIPEC_GPU_KEEP_DIR: where a failing case's folder (spec.pipe and data) is copied.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/lower/lower.h"
#include "compiler/sema/program.h"
#include "tests/difftest/spec_generator.h"
#include "tests/gpu/gpu_harness.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stoll(v) : fallback;
}

TEST(GpuRandomPipelines, EveryMapAfterToGpuGivesTheInterpretersValues) {
  auto side = gputest::gpu_side_or_fail();
  if (!side) return;
  const int64_t seeds = env_int("PIPEC_GPU_RANDOM_SEEDS", 100);
  const uint64_t first = static_cast<uint64_t>(env_int("PIPEC_GPU_RANDOM_FIRST", 1));
  const char* keep = std::getenv("PIPEC_GPU_KEEP_DIR");
  const fs::path work = fs::temp_directory_path() / fmt::format("pipec-gpu-random-{}", ::getpid());
  gputest::GpuStats stats;
  for (uint64_t seed = first; seed < first + static_cast<uint64_t>(seeds); ++seed) {
    difftest::GeneratedCase c = difftest::generate_case(seed);
    const fs::path dir = work / fmt::format("seed-{}", seed);
    difftest::write_case(c, dir);
    const std::string context =
        fmt::format("seed {} (`difftest --seed {}` makes the same case); the spec:\n{}", seed, seed, c.spec);
    const int failures_before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    auto program = check_file((dir / "spec.pipe").string());
    std::ostringstream diags;
    program->diags.print(diags, false);
    if (program->diags.has_errors() || !program->io_error.empty()) {
      ADD_FAILURE() << "the checker refused a generated spec: " << program->io_error << diags.str() << "\n" << context;
      continue;
    }
    for (const auto& d : program->main().decls) {
      if (d->kind != DeclKind::Pipeline) continue;
      Plan plan = lower_pipeline(*program, *d);
      if (auto problems = verify_plan(plan); !problems.empty()) {
        ADD_FAILURE() << "the plan does not verify: " << problems[0] << "\n" << context;
        continue;
      }
      for (auto& [form, p] : gputest::lowered_and_optimized(plan)) {
        ++stats.cases;
        const int64_t kernels_before = stats.kernels;
        const int maps = gputest::move_every_map_to_gpu(p);
        stats.maps += maps;
        gputest::compile_kernels(p, side->arch, context, stats);
        // One line per case before it runs, so that a run stopped by a timeout shows which case hung.
        std::cout << fmt::format("[ gpu-case  ] seed {} ({}): {} map(s), {} kernel(s)\n", seed, form, maps,
                                 stats.kernels - kernels_before)
                  << std::flush;
        gputest::compare_gpu_with_interpreter(p, *side, dir.string(), std::nullopt,
                                              fmt::format("seed {} ({})", seed, form), context, stats);
      }
    }
    if (keep &&
        ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() > failures_before) {
      std::error_code ec;
      fs::create_directories(fs::path(keep) / fmt::format("seed-{}", seed), ec);
      fs::copy(dir, fs::path(keep) / fmt::format("seed-{}", seed),
               fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    }
    fs::remove_all(dir);
  }
  fs::remove_all(work);
  stats.print(fmt::format("random pipelines (seeds {}..{}), every map after to(gpu)", first, first + seeds - 1),
              side->real);
  EXPECT_GT(stats.compared, 0);
  EXPECT_GT(stats.kernels, 0) << "the generator lowered no map of any random pipeline";
  if (side->real) {
    EXPECT_GT(stats.ran_on_gpu, 0);
  }
}

}  // namespace
}  // namespace pipec

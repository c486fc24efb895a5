// The CUDA printer on the random pipelines of the differential tester (tests/difftest's generator, the
// same seeds as the `difftest` ctest): every map and filter body that lowers to loop nests is printed as
// CUDA, compiled by NVRTC for sm_80 and sm_90, and compiled as host C++ and run on the rows the
// pipeline really feeds it and on random rows with edge values; the results must equal the
// interpreter's bit for bit. Bodies that do not lower must say why (they stay on the CPU, as with the
// JIT).
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/lower/lower.h"
#include "compiler/sema/program.h"
#include "runtime/exec/pipeline_run.h"
#include "tests/difftest/spec_generator.h"
#include "tests/unit/cuda_host_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::HostCase;

constexpr uint64_t kSeeds = 200;  // difftest's ctest runs seeds 1..200

struct SeedCase {
  HostCase c;
  std::vector<Chunk> inputs;  // what the pipeline feeds the stage (empty when its prefix fails)
};

// The chunks stage `index` of `plan` receives when the plan runs (the first 64 rows or so).
std::vector<Chunk> stage_inputs(const Plan& plan, size_t index, const fs::path& dir) {
  const Stage& s = plan.stages[index];
  if (s.inputs.size() != 1 || s.inputs[0] != static_cast<int>(index) - 1) return {};
  Plan prefix = plan;
  prefix.stages.resize(index);
  std::vector<Chunk> out;
  try {
    RunOptions ro;
    ro.threads = 1;
    ro.spec_dir = dir.string();
    PipelineRun run(prefix, ro);
    Chunk c;
    int64_t rows = 0;
    while (rows < 64 && run.next(c)) {
      rows += c.rows;
      if (c.rows > 0) out.push_back(c);
    }
  } catch (const std::exception&) {
    return {};  // the reference run fails before this stage: random rows only
  }
  return out;
}

struct Generated {
  std::vector<SeedCase> cases;
  std::vector<std::string> not_lowered;
  int bodies = 0;
};

// Every seed's case written under `root`, its map and filter bodies printed; `with_inputs`: also run
// each body's pipeline prefix for its real input chunks.
Generated generate(const fs::path& root, bool with_inputs) {
  Generated g;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    difftest::GeneratedCase gc = difftest::generate_case(seed);
    const fs::path dir = root / fmt::format("seed-{}", seed);
    difftest::write_case(gc, dir);
    auto program = check_file((dir / "spec.pipe").string());
    if (program->diags.has_errors()) {
      std::ostringstream diags;
      program->diags.print(diags, false);
      ADD_FAILURE() << "seed " << seed << " does not check:\n" << diags.str() << gc.spec;
      continue;
    }
    for (const auto& d : program->main().decls) {
      if (d->kind != DeclKind::Pipeline) continue;
      Plan plan = lower_pipeline(*program, *d);
      for (size_t i = 0; i < plan.stages.size(); ++i) {
        const Stage& s = plan.stages[i];
        if ((s.kind != StageKind::Map && s.kind != StageKind::Filter) || !s.fn || s.inputs.size() != 1) continue;
        ++g.bodies;
        std::vector<std::string> names;
        for (const Field& f : plan.stages.at(s.inputs[0]).element.fields) names.push_back(f.name);
        auto r = cuda_codegen::emit_cuda_map(*s.fn, names, fmt::format("pipec_seed{}_stage{}", seed, i));
        const std::string what = fmt::format("seed {} stage #{} ({})", seed, i, stage_name(s.kind));
        if (!r.kernel) {
          EXPECT_FALSE(r.error.empty()) << what;
          g.not_lowered.push_back(what + ": " + r.error);
          continue;
        }
        SeedCase sc;
        sc.c.what = what + "\n" + gc.spec;
        sc.c.fn = s.fn;
        sc.c.input = plan.stages.at(s.inputs[0]).element.fields;
        sc.c.kernel = r.kernel;
        if (with_inputs) sc.inputs = stage_inputs(plan, i, dir);
        g.cases.push_back(std::move(sc));
      }
    }
  }
  return g;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/pipec_cuda_difftest_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// NVRTC takes about a second per ten kernels, so each architecture is a test of its own (ctest runs
// them side by side); every kernel of the 200 seeds goes into one program per architecture.
void expect_nvrtc_compiles_all(int arch) {
  const gpu::Nvrtc* nvrtc = testing::nvrtc_or_fail();
  if (!nvrtc) return;
  TempDir tmp;
  Generated g = generate(tmp.path, false);
  ASSERT_GT(g.cases.size(), kSeeds / 2);
  std::vector<const GpuKernel*> ks;
  std::vector<std::string> entries;
  for (const SeedCase& sc : g.cases) {
    ks.push_back(sc.c.kernel.get());
    entries.push_back(sc.c.kernel->entry);
  }
  testing::expect_nvrtc_compiles(*nvrtc, testing::batch_source(ks), entries, "the random pipelines' kernels", {arch});
}

TEST(CudaDifftest, NvrtcCompilesTheRandomPipelinesForSm80) { expect_nvrtc_compiles_all(80); }
TEST(CudaDifftest, NvrtcCompilesTheRandomPipelinesForSm90) { expect_nvrtc_compiles_all(90); }

TEST(CudaDifftest, RandomPipelinesMatchTheInterpreterOnTheHost) {
  TempDir tmp;
  Generated g = generate(tmp.path, true);
  // Most generated bodies lower (the rest use what the loop nests do not: f16/bf16, unknown dims...).
  ASSERT_GT(g.cases.size(), kSeeds / 2) << g.not_lowered.size() << " of " << g.bodies << " bodies did not lower";
  testing::HostKernels host;
  for (SeedCase& sc : g.cases) {
    auto [ins, outs] = testing::kernel_dtypes(*sc.c.fn, *sc.c.kernel, sc.c.input);
    sc.c.index = host.add(*sc.c.kernel, ins, outs);
  }
  ASSERT_TRUE(host.build());
  std::mt19937_64 rng(7);
  int64_t real_chunks = 0;
  for (const SeedCase& sc : g.cases) {
    for (const Chunk& in : sc.inputs) {
      EXPECT_TRUE(testing::host_kernel_matches(sc.c, host.entry(sc.c.index), in, 99));
      ++real_chunks;
    }
    Chunk in = testing::random_chunk(*sc.c.fn, sc.c.input, 13, rng);
    in.first_index = 77;
    in.epoch = 1;
    EXPECT_TRUE(testing::host_kernel_matches(sc.c, host.entry(sc.c.index), in, 5));
  }
  EXPECT_GT(real_chunks, static_cast<int64_t>(g.cases.size()) / 2);
  std::cout << "  " << g.cases.size() << " of " << g.bodies << " map/filter bodies printed as CUDA and checked ("
            << real_chunks << " pipeline chunks); not lowered:\n";
  for (const std::string& s : g.not_lowered) std::cout << "    " << s << "\n";
}

}  // namespace
}  // namespace pipec

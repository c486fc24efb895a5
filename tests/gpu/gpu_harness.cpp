#include "tests/gpu/gpu_harness.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/codegen/cuda/attach_gpu_kernels.h"
#include "compiler/passes/pass_pipeline.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/gpu/ptx_cache.h"

namespace pipec::gputest {

namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + " ..."; }

// "stage 3: %2 = param at spec.pipe:17:60 has dtype bytes" -> "%2 = param has dtype bytes": the same
// reason from different places and stages counts as one.
std::string reason_kind(const std::string& why) {
  static const std::regex location(R"( ?\(?at [^ ()]+:[0-9]+:[0-9]+\)?)");
  static const std::regex stage(R"(^stage [0-9]+: )");
  static const std::regex value(R"(%[0-9]+)");
  std::string s = std::regex_replace(why, location, "");
  s = std::regex_replace(s, stage, "");
  s = std::regex_replace(s, value, "%N");
  return clip(s, 120);
}

}  // namespace

bool dry_run() { return env_is("PIPEC_GPU_DRY_RUN", "1"); }

std::optional<GpuSide> gpu_side_or_fail() {
  std::string why;
  if (const gpu::CudaDriver* d = gpu::cuda_driver(&why)) return GpuSide{DevicePolicy::Gpu, d->arch, true};
  if (dry_run()) return GpuSide{DevicePolicy::Auto, 90, false};
  ADD_FAILURE() << "these tests need a GPU: " << why
                << "\n(PIPEC_GPU_DRY_RUN=1 runs them on the CPU fallback to check the harness only)";
  return std::nullopt;
}

int move_every_map_to_gpu(Plan& plan) {
  int maps = 0;
  for (Stage& s : plan.stages) {
    if (s.kind != StageKind::Map || s.inputs.empty()) continue;
    plan.stages.at(s.inputs[0]).element.on_gpu = true;
    ++maps;
  }
  cuda_codegen::attach_gpu_kernels(plan);
  // --device gpu refuses a map after to(gpu) that has no kernel, and the subject here is the maps that
  // have one: the others read their input from the CPU again (their Stage::gpu keeps the reason).
  std::set<int> feeds_a_kernel;
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::Map && !s.inputs.empty() && s.gpu && s.gpu->unsupported.empty())
      feeds_a_kernel.insert(s.inputs[0]);
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::Map && !s.inputs.empty() && !feeds_a_kernel.count(s.inputs[0]))
      plan.stages.at(s.inputs[0]).element.on_gpu = false;
  return maps;
}

std::vector<std::pair<std::string, Plan>> lowered_and_optimized(const Plan& lowered) {
  std::vector<std::pair<std::string, Plan>> out;
  out.emplace_back("lowered", lowered);
  Plan optimized = lowered;
  run_passes(optimized, PassOptions{});
  out.emplace_back("optimized", std::move(optimized));
  return out;
}

void GpuStats::print(const std::string& name, bool real_gpu) const {
  std::string line = fmt::format(
      "[ gpu-stats ] {}: cases {}, maps {}, kernels {} (compiled {}), ran on the GPU {}, "
      "elements compared {}, cases failing alike {}{}",
      name, cases, maps, kernels, compiled, ran_on_gpu, compared, run_errors,
      real_gpu ? "" : " (dry run: no GPU, the GPU side ran on the CPU fallback)");
  std::cout << line << "\n";
  std::vector<std::pair<int64_t, std::string>> reasons;
  for (const auto& [why, n] : unsupported) reasons.emplace_back(n, why);
  std::sort(reasons.rbegin(), reasons.rend());
  for (size_t i = 0; i < reasons.size() && i < 8; ++i)
    std::cout << fmt::format("[ gpu-stats ]   {} map(s) stay on the CPU: {}\n", reasons[i].first, reasons[i].second);
}

void compile_kernels(const Plan& plan, int arch, const std::string& context, GpuStats& stats) {
  const gpu::Nvrtc* nvrtc = nullptr;
  std::string why;
  for (const Stage& s : plan.stages) {
    if (s.kind != StageKind::Map || !s.gpu) continue;
    if (!s.gpu->unsupported.empty()) {
      ++stats.unsupported[reason_kind(s.gpu->unsupported)];
      continue;
    }
    ++stats.kernels;
    if (!nvrtc) nvrtc = gpu::Nvrtc::get(&why);
    if (!nvrtc) {
      if (!env_is("PIPEC_ALLOW_NO_NVRTC", "1"))
        ADD_FAILURE() << "NVRTC is needed to compile the generated kernels: " << why;
      return;
    }
    // The runtime's own call (runtime/gpu/gpu_map_executor.cpp), so its cache entry serves the run.
    gpu::CachedPtx ptx = gpu::compile_ptx_cached(*nvrtc, s.gpu->source, s.gpu->entry + ".cu", arch, {"--fmad=false"});
    if (ptx.result.ok) {
      ++stats.compiled;
    } else {
      ADD_FAILURE() << fmt::format("NVRTC could not compile the kernel {} for compute_{}:\n{}\n{}", s.gpu->entry, arch,
                                   clip(ptx.result.log, 3000), context);
    }
  }
}

SideRun run_side(const Plan& plan, DevicePolicy device, const std::string& spec_dir, std::optional<int64_t> take,
                 uint64_t seed) {
  SideRun r;
  try {
    RunOptions o;
    o.device = device;
    o.seed = seed;
    o.threads = 4;
    o.spec_dir = spec_dir;
    PipelineRun run(plan, o);
    const std::vector<Field>& fields = plan.stages.back().element.fields;
    Chunk c;
    auto full = [&] { return take && static_cast<int64_t>(r.out.elements.size()) >= *take; };
    while (!full() && run.next(c)) {
      for (int64_t row = 0; row < c.rows && !full(); ++row) {
        difftest::Element e;
        for (size_t k = 0; k < fields.size(); ++k) e.emplace_back(fields[k].name, column_row(c.columns[k], row));
        std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        r.out.elements.push_back(std::move(e));
      }
    }
    r.out.ok = true;
    r.stage_device = run.context().stage_device;
  } catch (const std::exception& e) {
    r.out.error = e.what();
  }
  return r;
}

int compare_gpu_with_interpreter(const Plan& plan, const GpuSide& side, const std::string& spec_dir,
                                 std::optional<int64_t> take, const std::string& what, const std::string& context,
                                 GpuStats& stats) {
  SideRun gpu = run_side(plan, side.policy, spec_dir, take);
  SideRun cpu = run_side(plan, DevicePolicy::Cpu, spec_dir, take);
  int on_gpu = 0;
  for (const std::string& d : gpu.stage_device) on_gpu += d.rfind("gpu: ", 0) == 0;
  stats.ran_on_gpu += on_gpu;
  if (!cpu.out.ok && !gpu.out.ok) {
    ++stats.run_errors;
    stats.last_error = cpu.out.error;
  }
  if (auto m = difftest::compare_outputs(cpu.out, gpu.out, difftest::Tolerance::Ulp)) {
    ADD_FAILURE() << fmt::format(
        "{}: the GPU side differs from the interpreter at element {}, field `{}`, index {}: {}\n{}", what, m->element,
        m->field, m->index, m->what, context);
  } else if (cpu.out.ok) {
    stats.compared += static_cast<int64_t>(cpu.out.elements.size());
  }
  if (side.real) {
    // Every map with a kernel must have run on the GPU (--device gpu turns an executor's refusal into
    // an error; this also catches a map that was never handed to the GPU).
    int with_kernel = 0;
    for (const Stage& s : plan.stages) with_kernel += s.kind == StageKind::Map && s.gpu && s.gpu->unsupported.empty();
    if (gpu.out.ok) {
      EXPECT_EQ(on_gpu, with_kernel) << what << ": " << with_kernel << " map(s) have a kernel but " << on_gpu
                                     << " ran on the GPU\n"
                                     << context;
    }
  }
  return on_gpu;
}

}  // namespace pipec::gputest

// The CUDA code generator on whole maps, checked without a GPU:
//  - every map of every example (examples/*/*.pipe, after to(gpu) or not) lowers for the GPU exactly
//    when the JIT compiles it (one op set: the loop nests'), and NVRTC compiles each kernel to PTX for
//    sm_80 and sm_90;
//  - the same sources, compiled as host C++ (the prelude's host mode), give the interpreter's values
//    bit for bit on random rows with edge values, random ops included;
//  - synthetic maps written in the language cover the op families through the front end.
// NVRTC comes with the CUDA toolkit that scripts/setup.sh expects; a machine without it fails these
// tests loudly unless PIPEC_ALLOW_NO_NVRTC=1 says that is intended.
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/codegen/cuda/attach_gpu_kernels.h"
#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/codegen/stage_kernel.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/cuda_host_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using cuda_codegen::emit_cuda_map;
using testing::HostCase;
using testing::HostKernels;

std::vector<Plan> plans_of_file(const std::string& path) { return testing::compiled_plans_of_file(path); }

Plan plan_of(const std::string& text) { return testing::compiled_plan(text); }

std::vector<std::string> input_fields(const Plan& p, const Stage& s) {
  std::vector<std::string> out;
  for (const Field& f : p.stages.at(s.inputs.at(0)).element.fields) out.push_back(f.name);
  return out;
}

std::vector<std::string> example_specs() {
  std::vector<std::string> out;
  for (const auto& dir : fs::directory_iterator(fs::path(PIPEC_SOURCE_DIR) / "examples"))
    if (dir.is_directory())
      for (const auto& f : fs::directory_iterator(dir.path()))
        if (f.path().extension() == ".pipe") out.push_back(f.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Every map of `plan` with its generated kernel, named `pipec_map_<next>` (so a batch's entries differ);
// `skipped` gets the maps that stay on the CPU and why.
std::vector<HostCase> map_cases(const Plan& plan, const std::string& tag, int& next,
                                std::vector<std::string>& skipped) {
  std::vector<HostCase> out;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    if (s.kind != StageKind::Map || !s.fn || s.inputs.size() != 1) continue;
    HostCase c;
    c.what = fmt::format("{} stage #{}", tag, i);
    auto r = emit_cuda_map(*s.fn, input_fields(plan, s), fmt::format("pipec_map_{}", next++));
    if (!r.kernel) {
      skipped.push_back(c.what + ": " + r.error);
      continue;
    }
    c.fn = s.fn;
    c.input = plan.stages.at(s.inputs[0]).element.fields;
    c.kernel = r.kernel;
    out.push_back(std::move(c));
  }
  return out;
}

// Compiles `cases` on the host in one batch and compares each with the interpreter on `rows` random
// rows. Returns the number of cases compared.
int host_differential(std::vector<HostCase>& cases, int64_t rows, int64_t first_index, int64_t epoch, uint64_t seed) {
  HostKernels host;
  for (HostCase& c : cases) {
    auto [ins, outs] = testing::kernel_dtypes(*c.fn, *c.kernel, c.input);
    c.index = host.add(*c.kernel, ins, outs);
  }
  if (cases.empty() || !host.build()) return 0;
  std::mt19937_64 rng(seed);
  int compared = 0;
  for (const HostCase& c : cases) {
    Chunk in = testing::random_chunk(*c.fn, c.input, rows, rng);
    in.first_index = first_index;
    in.epoch = epoch;
    EXPECT_TRUE(testing::host_kernel_matches(c, host.entry(c.index), in, seed));
    ++compared;
  }
  return compared;
}

TEST(CudaCodegen, EveryExampleMapLowersExactlyWhenTheJitCompilesIt) {
  int maps = 0, kernels = 0;
  for (const std::string& path : example_specs()) {
    for (const Plan& plan : plans_of_file(path)) {
      for (size_t i = 0; i < plan.stages.size(); ++i) {
        const Stage& s = plan.stages[i];
        if (s.kind != StageKind::Map || !s.fn) continue;
        ++maps;
        codegen::LoopNest nest;
        std::string jit_why;
        const bool jit = codegen::stage_loop_nest(plan, static_cast<int>(i), nest, jit_why);
        auto r = emit_cuda_map(*s.fn, input_fields(plan, s), "k");
        EXPECT_EQ(jit, r.kernel != nullptr) << path << " stage #" << i << ": JIT: " << jit_why << "; CUDA: " << r.error;
        if (!jit && !r.kernel) {
          EXPECT_EQ(jit_why, r.error) << path << " stage #" << i;
        }
        kernels += r.kernel != nullptr;
      }
    }
  }
  EXPECT_GT(maps, 8);
  EXPECT_GE(kernels, 3);  // chess (twice) and preprocess at least
}

TEST(CudaCodegen, NvrtcCompilesEveryExampleMap) {
  const gpu::Nvrtc* nvrtc = testing::nvrtc_or_fail();
  int kernels = 0, next = 0;
  std::vector<std::string> skipped;
  for (const std::string& path : example_specs()) {
    for (const Plan& plan : plans_of_file(path)) {
      for (const HostCase& c : map_cases(plan, path, next, skipped)) {
        ++kernels;
        if (nvrtc) testing::expect_nvrtc_compiles(*nvrtc, c.kernel->source, {c.kernel->entry}, c.what);
      }
    }
  }
  for (const std::string& s : skipped) std::cout << "  not lowered (runs on the CPU): " << s << "\n";
  EXPECT_GE(kernels, 3);
}

TEST(CudaCodegenHost, EveryExampleMapMatchesTheInterpreter) {
  std::vector<HostCase> cases;
  std::vector<std::string> skipped;
  int next = 0;
  for (const std::string& path : example_specs()) {
    int p = 0;
    for (const Plan& plan : plans_of_file(path))
      for (HostCase& c : map_cases(plan, fmt::format("{} pipeline {}", path, p++), next, skipped))
        cases.push_back(std::move(c));
  }
  EXPECT_GE(host_differential(cases, 37, 1000, 1, 42), 3);
}

TEST(CudaCodegen, ChessAndDeblurMapsAreLoweredAndSegmentationSaysWhyNot) {
  Plan chess = plans_of_file(std::string(PIPEC_SOURCE_DIR) + "/examples/chess/chess.pipe").at(0);
  bool found = false;
  for (const Stage& s : chess.stages)
    if (s.kind == StageKind::Map) {
      auto r = emit_cuda_map(*s.fn, input_fields(chess, s), "k");
      EXPECT_TRUE(r.kernel) << r.error;
      found = true;
    }
  EXPECT_TRUE(found);
  // deblur's map after to(gpu) (convert_image_dtype, normalize, arithmetic) gets a kernel. The training
  // pipeline is the file's last one (the first two list the image files).
  Plan deblur = plans_of_file(std::string(PIPEC_SOURCE_DIR) + "/examples/deblur/deblur.pipe").back();
  EXPECT_EQ(cuda_codegen::attach_gpu_kernels(deblur), 1);
  for (const Stage& s : deblur.stages)
    if (s.gpu) {
      EXPECT_TRUE(s.gpu->unsupported.empty()) << s.gpu->unsupported;
    }
  // segmentation's reads its colours from class_dict.csv, which this plan (compiled without a data
  // folder, as `pipec explain` and `pipec build` compile it) leaves to the run: it gets a GpuKernel
  // that says which op and where, so a run that cannot read the file first warns and keeps that map on
  // the CPU. (`pipec run` reads the file before compiling: tests/unit/colour_file_run_test.cpp.)
  Plan seg = plans_of_file(std::string(PIPEC_SOURCE_DIR) + "/examples/segmentation/segmentation.pipe").back();
  EXPECT_EQ(cuda_codegen::attach_gpu_kernels(seg), 0);
  int marked = 0;
  for (const Stage& s : seg.stages)
    if (s.gpu) {
      ++marked;
      EXPECT_NE(s.gpu->unsupported.find("segmentation.pipe:"), std::string::npos) << s.gpu->unsupported;
      EXPECT_NE(s.gpu->unsupported.find("one_hot_colors"), std::string::npos) << s.gpu->unsupported;
      EXPECT_TRUE(s.gpu->source.empty());
    }
  EXPECT_EQ(marked, 1);
}

// Synthetic maps written in the language, covering every op family through the front end.
const char* kSynthetic[] = {
    // arithmetic, casts, comparisons, logic, where, clip, min/max/sign, bit ops, float math
    "pipeline p = range(100) | map(r => {\n"
    "  x = f32(r.value) * 0.25 - 3.0\n"
    "  {\n"
    "    a: tanh(x) + exp(-abs(x)) * sqrt(abs(x)) - sigmoid(x) + log1p(abs(x)) * cos(x) - sin(x) / rsqrt(abs(x) + "
    "1.0),\n"
    "    b: where(x > 0.0, floor(x), ceil(x)) - relu(-x) * square(x),\n"
    "    c: clip(r.value * 7 - 300, -100, 100),\n"
    "    d: i32(x * 1000.0) + max(i32(r.value), 50) - min(i32(r.value), 20) + sign(i32(r.value) - 40),\n"
    "    e: bit_or(r.value & 6, r.value ^ 3) + ~r.value,\n"
    "    f: u8(r.value * 37),\n"
    "    g: r.value > 30 && !(r.value == 50) || r.value <= 3,\n"
    "    h: i64(f64(r.value) * 1e18) + i64(x * 3e9)\n"
    "  }\n"
    "})\n",
    // bits, slices, gathers, reshapes, broadcasting against constant tables
    "pipeline p = range(64) | map(r => {\n"
    "  v = u8([1, 2, 3, 4, 5, 6, 7, 8] * r.value + [0, 9, 18, 27, 36, 45, 54, 63])\n"
    "  bits = unpack_bits(v)\n"
    "  grid = reshape(bits[0:48], [4, 3, 4])\n"
    "  { g: f32(grid[:, :, [3, 0, 2]]) * [1.0, -1.0, 0.5], s: bits[60:4:-3], t: grid[1:, ::2, 1] }\n"
    "})\n",
    // random ops: uniform (f32 and f64), normal, int, with and without their own seed, per-row operands
    "pipeline p = range(50) | map(r => {\n"
    "  {\n"
    "    u: random_uniform([3, 5], -2.0, 2.0),\n"
    "    w: f64(random_uniform([7], seed = 11)) + f64(r.value),\n"
    "    n: random_normal([6], 1.0, 3.0, seed = 5),\n"
    "    m: random_normal([3], f64(r.value), 2.0),\n"
    "    k: random_int([9], -3, 1000)\n"
    "  }\n"
    "})\n",
    // what the ExprFunction-based generator lacked: floordiv, mod, pow, round, atan2, shifts,
    // transpose, concat, stack, pack_bits, one_hot, reductions
    "pipeline p = range(80) | map(r => {\n"
    "  v = r.value - 40\n"
    "  x = f32(v) * 0.75\n"
    "  m = reshape(f32([1, 2, 3, 4, 5, 6]) * x, [2, 3])\n"
    "  {\n"
    "    q: v // 7 + v % -3 + (v + 2) ** 3,\n"
    "    fq: x // 1.5 + x % -2.0 + x ** 2.0 + round(x * 0.3) + atan2(x, 2.0),\n"
    "    sh: (v << 3) + (v >> 2),\n"
    "    t: transpose(m, [1, 0]),\n"
    "    c: concat([m, m * 2.0], axis = 1),\n"
    "    st: stack([x, -x, x * x]),\n"
    "    pb: pack_bits(unpack_bits(u8([v, 3 * v]))),\n"
    "    oh: one_hot(v % 5, 5),\n"
    "    s: sum(m, axis = 1) + mean(m) + reduce_max(m, axis = 0)[0] - reduce_min(m),\n"
    "    pr: prod(i64([v, 2, 3]))\n"
    "  }\n"
    "})\n",
};

std::vector<HostCase> synthetic_cases() {
  std::vector<HostCase> cases;
  std::vector<std::string> skipped;
  int next = 0;
  for (size_t k = 0; k < std::size(kSynthetic); ++k) {
    Plan plan = plan_of(kSynthetic[k]);
    std::vector<HostCase> c = map_cases(plan, fmt::format("synthetic map {}", k), next, skipped);
    EXPECT_EQ(c.size(), 1u) << kSynthetic[k];
    for (HostCase& h : c) cases.push_back(std::move(h));
  }
  for (const std::string& s : skipped) ADD_FAILURE() << "not lowered: " << s;
  return cases;
}

TEST(CudaCodegen, NvrtcCompilesSyntheticMaps) {
  const gpu::Nvrtc* nvrtc = testing::nvrtc_or_fail();
  if (!nvrtc) return;
  for (const HostCase& c : synthetic_cases())
    testing::expect_nvrtc_compiles(*nvrtc, c.kernel->source, {c.kernel->entry}, c.what);
}

TEST(CudaCodegenHost, SyntheticMapsMatchTheInterpreter) {
  std::vector<HostCase> cases = synthetic_cases();
  EXPECT_EQ(host_differential(cases, 37, 5, 0, 0), static_cast<int>(std::size(kSynthetic)));
  // Other element indices (past 2^32), epochs and run seeds give other streams, still the interpreter's.
  cases = synthetic_cases();
  EXPECT_EQ(host_differential(cases, 23, (int64_t{1} << 32) + 17, 3, 0xdeadbeefcafeULL),
            static_cast<int>(std::size(kSynthetic)));
}

TEST(CudaCodegen, NvrtcReportsCompileErrors) {
  const gpu::Nvrtc* nvrtc = testing::nvrtc_or_fail();
  if (!nvrtc) return;
  gpu::PtxResult r = nvrtc->compile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", 80);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_thing"), std::string::npos) << r.log;
}

TEST(CudaCodegen, UnsupportedOpsAreNamedWithTheirLocation) {
  Plan plan = plan_of("pipeline p = range(10) | map(r => { x: argmax(f32([1, 2]) * f32(r.value)) })\n");
  auto r = emit_cuda_map(*plan.stages.back().fn, input_fields(plan, plan.stages.back()), "k");
  EXPECT_FALSE(r.kernel);
  EXPECT_NE(r.error.find("argmax"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("test.pipe:1:"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace pipec

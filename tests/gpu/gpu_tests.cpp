// GPU-vs-interpreter differential tests on synthetic maps. They need a GPU and run from
// tests/gpu/run.sh, not from ctest (CI has no GPU); without one every test fails, saying why, unless
// PIPEC_GPU_DRY_RUN=1 (tests/gpu/gpu_harness.h).
//
// Each case runs a plan twice through PipelineRun, once with --device gpu (the maps after to(gpu) run
// the generated kernels) and once with --device cpu (the interpreter), and compares every output
// value: integers and bools exactly, floats within the compiler issue's tolerance (1e-6 relative, or
// 4 ulp-scale for transcendental results). The examples and the random pipelines, with every map moved
// after to(gpu), are in gpu_examples_test.cpp and gpu_random_test.cpp.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "compiler/compile/compile.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/gpu_map_executor.h"
#include "runtime/trace/trace.h"
#include "tests/gpu/gpu_harness.h"

namespace pipec {
namespace {

// The plan as lowered, with the CUDA kernels of its maps after to(gpu).
Plan plan_of(const std::string& text) {
  CompileOptions options;
  options.passes.opt_level = 0;
  options.device = DevicePolicy::Auto;
  CompileResult r = compile_text("gpu_test.pipe", text, "", options);
  std::ostringstream problems;
  r.program->diags.print(problems, false);
  EXPECT_TRUE(r.ok()) << problems.str() << r.error;
  return r.ok() ? std::move(r.pipelines[0].plan) : Plan{};
}

std::vector<Chunk> run_all(const Plan& plan, DevicePolicy device, uint64_t seed, std::vector<std::string>* devices) {
  RunOptions o;
  o.device = device;
  o.seed = seed;
  o.threads = 4;
  PipelineRun run(plan, o);
  std::vector<Chunk> out;
  Chunk c;
  while (run.next(c)) out.push_back(c);
  if (devices) *devices = run.context().stage_device;
  return out;
}

double at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Bool: return t.data<bool>()[i];
    case DType::U8: return t.data<uint8_t>()[i];
    case DType::I8: return t.data<int8_t>()[i];
    case DType::U16: return t.data<uint16_t>()[i];
    case DType::I16: return t.data<int16_t>()[i];
    case DType::U32: return t.data<uint32_t>()[i];
    case DType::U64: return static_cast<double>(t.data<uint64_t>()[i]);
    case DType::I32: return t.data<int32_t>()[i];
    case DType::I64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::F32: return t.data<float>()[i];
    case DType::F64: return t.data<double>()[i];
    default: return NAN;
  }
}

void expect_same(const std::vector<Chunk>& gpu, const std::vector<Chunk>& cpu, double rel_tol) {
  ASSERT_EQ(gpu.size(), cpu.size());
  int64_t compared = 0;
  for (size_t k = 0; k < gpu.size(); ++k) {
    ASSERT_EQ(gpu[k].columns.size(), cpu[k].columns.size());
    for (size_t c = 0; c < gpu[k].columns.size(); ++c) {
      const Tensor& g = gpu[k].columns[c].dense;
      const Tensor& w = cpu[k].columns[c].dense;
      ASSERT_EQ(g.dtype(), w.dtype());
      ASSERT_EQ(g.shape(), w.shape());
      int bad = 0;
      for (int64_t i = 0; i < w.num_elements() && bad < 5; ++i, ++compared) {
        double a = at(g, i), b = at(w, i);
        // Integers and bools must be bit-exact (compared as bytes: a 64-bit value does not fit a double).
        size_t width = dtype_size(w.dtype());
        bool ok = is_float(w.dtype()) ? (a == b || (std::isnan(a) && std::isnan(b)) ||
                                         std::fabs(a - b) <= rel_tol * std::max(1.0, std::fabs(b)))
                                      : std::memcmp(g.raw() + i * width, w.raw() + i * width, width) == 0;
        if (!ok) {
          ++bad;
          ADD_FAILURE() << fmt::format("chunk {} column {} value {}: gpu {} cpu {}", k, c, i, a, b);
        }
      }
    }
  }
  EXPECT_GT(compared, 0);
}

void differential(const std::string& text, double rel_tol = 1e-6) {
  auto side = gputest::gpu_side_or_fail();
  if (!side) return;
  Plan plan = plan_of(text);
  gputest::GpuStats stats;
  gputest::compile_kernels(plan, side->arch, text, stats);
  EXPECT_GT(stats.kernels, 0) << "the generator lowered no map of\n" << text;
  std::vector<std::string> devices;
  // Every map here has a kernel, so --device gpu must run them all there (a dry run falls back).
  auto gpu = run_all(plan, side->real ? DevicePolicy::Gpu : DevicePolicy::Auto, 7, &devices);
  bool any_gpu = false;
  for (const std::string& d : devices) any_gpu |= d.rfind("gpu: ", 0) == 0;
  if (side->real) {
    EXPECT_TRUE(any_gpu) << "no stage ran on the GPU";
  }
  auto cpu = run_all(plan, DevicePolicy::Cpu, 7, nullptr);
  expect_same(gpu, cpu, rel_tol);
}

TEST(GpuDifferential, Arithmetic) {
  differential(
      "pipeline p = range(100_000) | to(gpu) | map(r => {\n"
      "  x = f32(r.value) * 0.25 - 3.0\n"
      "  { a: where(x > 0.0, floor(x), ceil(x)) + x * x, c: clip(r.value * 7 - 300, -100, 100),\n"
      "    e: bit_or(r.value & 6, r.value ^ 3), f: u8(r.value * 37), g: r.value > 30 && !(r.value == 50) }\n"
      "}) | batch(1000)\n");
}

TEST(GpuDifferential, Transcendentals) {
  differential(
      "pipeline p = range(100_000) | to(gpu) | map(r => {\n"
      "  x = f32(r.value) * 0.001 - 50.0\n"
      "  { a: tanh(x) + exp(-abs(x)) * sqrt(abs(x)) - sigmoid(x), b: tanh(f64(x)) * 2.0 + log1p(abs(f64(x))) }\n"
      "})\n",
      4e-6);
}

TEST(GpuDifferential, BitsSlicesGathers) {
  differential(
      "pipeline p = range(50_000) | to(gpu) | map(r => {\n"
      "  v = u8([1, 2, 3, 4, 5, 6, 7, 8] * r.value + [0, 9, 18, 27, 36, 45, 54, 63])\n"
      "  bits = unpack_bits(v)\n"
      "  grid = reshape(bits[0:48], [4, 3, 4])\n"
      "  { g: f32(grid[:, :, [3, 0, 2]]) * [1.0, -1.0, 0.5], s: bits[60:4:-3] }\n"
      "}) | batch(64, drop_remainder = true)\n");
}

TEST(GpuDifferential, RandomOpsGiveTheCpuValues) {
  // Same spec, same values on both devices: uniform exactly, normal within libm differences.
  differential(
      "pipeline p = range(20_000) | repeat(2) | to(gpu) | map(r => {\n"
      "  { u: random_uniform([3, 5], -2.0, 2.0), w: f64(random_uniform([7], seed = 11)),\n"
      "    n: random_normal([6], 1.0, 3.0, seed = 5) }\n"
      "})\n",
      1e-9);
}

TEST(GpuDifferential, IntegerDivisionModuloPowersAndShiftsAtTheirEdges) {
  // Divisors -3..3 (zero and -1 included), MIN // -1, negative exponents, shift counts past the width:
  // every value exactly the CPU's.
  differential(
      "pipeline p = range(60_000) | to(gpu) | map(r => {\n"
      "  v = i32(r.value) - 30000\n"
      "  d = i32(r.value % 7) - 3\n"
      "  m = i32(r.value * 0 - 2147483648)\n"
      "  {\n"
      "    q: v // d, md: v % d, mq: m // where(d == 0, -1, d), mm: m % d,\n"
      "    p: (d + 1) ** (d - 1), p8: u8(r.value) ** u8(d + 3),\n"
      "    sl: v << (d * 11), sr: v >> (d * 11), ur: u64(r.value) >> u64(d + 61)\n"
      "  }\n"
      "}) | batch(500)\n");
}

TEST(GpuDifferential, FloatFloorDivisionModuloPowersRounding) {
  // fmod, floor and round are exact on the GPU; powf and atan2 may differ by a few ulps.
  differential(
      "pipeline p = range(60_000) | to(gpu) | map(r => {\n"
      "  x = f32(r.value) * 0.37 - 9000.0\n"
      "  y = f32(r.value % 9) - 4.0\n"
      "  { fd: x // y, fm: x % y, rd: round(x * 0.5), dm: f64(x) % -2.5 }\n"
      "})\n");
  differential(
      "pipeline p = range(60_000) | to(gpu) | map(r => {\n"
      "  x = f32(r.value) * 0.001 + 0.5\n"
      "  { pw: x ** 1.7, at: atan2(x - 30.0, 2.0), pd: f64(x) ** 0.3 }\n"
      "})\n",
      4e-6);
}

TEST(GpuDifferential, StructuralOpsAndReductions) {
  // Reductions fold in the CPU's order and accumulator types, so even float sums are the same bits.
  differential(
      "pipeline p = range(40_000) | to(gpu) | map(r => {\n"
      "  v = r.value % 1000 - 500\n"
      "  m = reshape(f32([1, 2, 3, 4, 5, 6]) * f32(v) * 0.1, [2, 3])\n"
      "  {\n"
      "    t: transpose(m, [1, 0]), c: concat([m, m * 2.0], axis = 1), st: stack([v, -v, v * v]),\n"
      "    pb: pack_bits(unpack_bits(u8([v, 3 * v]))), oh: one_hot(v % 5, 5),\n"
      "    s: sum(m, axis = 1), mn: mean(m), mx: reduce_max(m, axis = 0), mi: reduce_min(m), pr: prod(i64([v, 2, 3]))\n"
      "  }\n"
      "}) | batch(100, drop_remainder = true)\n");
}

TEST(GpuDifferential, RandomIntGivesTheCpuValues) {
  // A range of 3 * 2^30 values rejects a quarter of the draws; a power of two rejects none.
  differential(
      "pipeline p = range(20_000) | repeat(2) | to(gpu) | map(r => {\n"
      "  { a: random_int([5], -3, 1000), b: random_int([9], 0, 3221225472, seed = 3), c: random_int([4], -8, 8) }\n"
      "})\n");
}

TEST(GpuExecutor, PoolReusesBuffersAcrossBatches) {
  std::string why;
  const gpu::CudaDriver* d = gpu::cuda_driver(&why);
  if (!d && gputest::dry_run()) GTEST_SKIP() << "dry run: the executor needs a GPU (" << why << ")";
  ASSERT_NE(d, nullptr) << "this test needs a GPU: " << why;
  Plan plan = plan_of("pipeline p = range(10) | to(gpu) | map(r => { y: f32(r.value) * 2.0 })\n");
  const Stage& s = plan.stages.back();
  ASSERT_TRUE(s.gpu && s.gpu->unsupported.empty());
  gpu::GpuMapExecutor exec(*d, *s.gpu, {{DType::I64, {}}}, {{DType::F32, {}}}, 2);
  for (int k = 0; k < 50; ++k) {
    Chunk in;
    in.rows = 1000;
    in.first_index = k * 1000;
    Column c;
    c.dense = Tensor::empty(DType::I64, {1000});
    for (int i = 0; i < 1000; ++i) c.dense.data<int64_t>()[i] = k * 1000 + i;
    in.columns.push_back(c);
    if (!exec.can_submit()) {
      Chunk out = exec.collect();
      EXPECT_EQ(out.columns[0].dense.data<float>()[1], 2.0f * static_cast<float>(out.first_index + 1));
    }
    exec.submit(in, 0);
  }
  while (exec.has_pending()) exec.collect();
  // Two slots, one input and one output each: four buffers, however many batches.
  EXPECT_LE(exec.pool().allocations(), 4u);
}

// A traced run puts each chunk's copy in, kernel and copy out on three tracks of a "GPU" row, in
// order within each chunk, at times within the run's.
TEST(GpuExecutor, TracedChunksHaveCopiesAndKernelsOnTracksOfTheirOwn) {
  std::string why;
  const gpu::CudaDriver* d = gpu::cuda_driver(&why);
  if (!d && gputest::dry_run()) GTEST_SKIP() << "dry run: the executor needs a GPU (" << why << ")";
  ASSERT_NE(d, nullptr) << "this test needs a GPU: " << why;
  Plan plan = plan_of("pipeline p = range(10) | to(gpu) | map(r => { y: f32(r.value) * 2.0 })\n");
  const Stage& s = plan.stages.back();
  ASSERT_TRUE(s.gpu && s.gpu->unsupported.empty());
  trace::start("gpu test");
  const int64_t before = trace::now_ns();
  {
    gpu::GpuMapExecutor exec(*d, *s.gpu, {{DType::I64, {}}}, {{DType::F32, {}}}, 2);
    for (int k = 0; k < 6; ++k) {
      Chunk in;
      in.rows = 100000;
      Column c;
      c.dense = Tensor::empty(DType::I64, {100000});
      for (int i = 0; i < 100000; ++i) c.dense.data<int64_t>()[i] = i;
      in.columns.push_back(c);
      if (!exec.can_submit()) exec.collect();
      exec.submit(in, 0);
    }
    while (exec.has_pending()) exec.collect();
  }
  const double span_us = (trace::now_ns() - before) / 1e3;
  trace::stop();
  const nlohmann::json j = nlohmann::json::parse(trace::to_json());
  int gpu_pid = -1;
  std::map<int, std::string> tracks;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "GPU") gpu_pid = e["pid"];
  ASSERT_GT(gpu_pid, 1);
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == gpu_pid) tracks[e["tid"]] = e["args"]["name"];
  std::map<std::string, int> spans;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != gpu_pid) continue;
    ++spans[tracks.at(e["tid"].get<int>())];
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_LE(e["ts"].get<double>(), span_us + 1000);  // within the run (the trace starts at 0)
  }
  EXPECT_EQ(spans["copies host to device"], 6);
  EXPECT_EQ(spans["kernels"], 6);
  EXPECT_EQ(spans["copies device to host"], 6);
}

}  // namespace
}  // namespace pipec

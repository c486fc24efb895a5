// map_filter (a map fused with the filter after it, compiler/passes/map_filter_fusion.cpp) compiles as a
// map does: its kernel writes the map's fields and then the keep flag, and the runtime keeps the rows
// whose flag is set. The kernel's elements are the interpreter's, bit for bit, whatever the filter
// drops; what the kernel cannot take (a string field, a run-time index out of range) runs on the
// interpreter, which reports errors naming the stage.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>

#include "compiler/codegen/llvm/aot.h"
#include "compiler/codegen/stage_kernel.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/codegen_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

CompileOptions with_kernels(CpuKernels kernels) {
  CompileOptions o;
  o.passes.opt_level = 1;
  o.cpu_kernels = kernels;
  o.jit.use_cache = false;
  return o;
}

int map_filter_stage(const Plan& plan) {
  for (size_t i = 0; i < plan.stages.size(); ++i)
    if (plan.stages[i].kind == StageKind::MapFilter) return static_cast<int>(i);
  return -1;
}

// Every element of a run as text that holds every byte: per field its dtype, shape and raw bytes (or
// the strings of a bytes tensor).
std::vector<std::string> run_exact(const Plan& plan, int64_t chunk_rows, int threads) {
  RunOptions ro;
  ro.seed = 11;
  ro.threads = threads;
  ro.chunk_rows = chunk_rows;
  ro.device = DevicePolicy::Cpu;
  PipelineRun run(plan, ro);
  std::vector<std::string> out;
  Chunk c;
  while (run.next(c))
    for (int64_t r = 0; r < c.rows; ++r) {
      std::string e;
      for (const Column& col : c.columns) {
        const Tensor t = column_row(col, r);
        e += std::string(dtype_name(t.dtype())) + shape_to_spec(t.shape()) + ":";
        if (t.dtype() == DType::Bytes) {
          for (int64_t i = 0; i < t.num_elements(); ++i) e += std::string(t.str(i)) + "|";
        } else {
          e.append(reinterpret_cast<const char*>(t.raw()), t.byte_size());
        }
        e += ";";
      }
      out.push_back(std::move(e));
    }
  return out;
}

// Counts the calls of the kernel it wraps, so a test knows the kernel (not the interpreter) ran.
std::atomic<int> g_calls{0};
PipecKernelFn g_wrapped = nullptr;
int32_t counting_kernel(const PipecKernelArgs* args) {
  ++g_calls;
  return g_wrapped(args);
}

// The pipeline `pipeline`'s map_filter stage gets a JIT kernel, and the run on it gives the elements
// of the interpreter (the same optimized plan with --no-jit) and of -O0, in chunks of 1, 7 and 64 rows.
void expect_kernel_matches_interpreter(const std::string& pipeline, size_t want_elements) {
  SCOPED_TRACE(pipeline);
  const std::string spec = "pipeline p = " + pipeline + "\n";
  CompileResult r = compile_text("test.pipe", spec, "", with_kernels(CpuKernels::Jit));
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  Plan jit = r.pipelines[0].plan;
  const int s = map_filter_stage(jit);
  ASSERT_GE(s, 0) << print_plan(jit);
  ASSERT_TRUE(r.pipelines[0].jit.has_value());
  bool reported = false;
  for (const codegen::StageJitStatus& st : r.pipelines[0].jit->stages)
    if (st.stage == s && st.within.empty()) {
      EXPECT_TRUE(st.native) << st.why_not;
      reported = true;
    }
  EXPECT_TRUE(reported);
  const Stage& fused = jit.stages[static_cast<size_t>(s)];
  ASSERT_NE(fused.native, nullptr);
  ASSERT_NE(fused.native->fn, nullptr);
  EXPECT_EQ(fused.native->backend, "llvm-jit");
  auto counted = std::make_shared<NativeKernel>(*fused.native);
  g_wrapped = counted->fn;
  counted->fn = counting_kernel;
  jit.stages[static_cast<size_t>(s)].native = counted;

  const Plan interpreted = testing::compiled_plan(spec, "", with_kernels(CpuKernels::None));
  ASSERT_EQ(interpreted.stages.at(static_cast<size_t>(s)).kind, StageKind::MapFilter);
  ASSERT_EQ(interpreted.stages.at(static_cast<size_t>(s)).native, nullptr);
  const Plan reference = testing::compiled_plan(spec);  // -O0: the map and the filter apart
  EXPECT_EQ(map_filter_stage(reference), -1);

  const std::vector<std::string> want = run_exact(reference, 1, 1);
  EXPECT_EQ(want.size(), want_elements);
  EXPECT_EQ(run_exact(interpreted, 7, 2), want);
  g_calls = 0;
  for (int64_t rows : {1, 7, 64}) EXPECT_EQ(run_exact(jit, rows, rows == 1 ? 1 : 3), want) << rows << " rows";
  EXPECT_GT(g_calls.load(), 0) << "the kernel never ran";
}

TEST(MapFilterKernel, TheFusedStageRunsOnItsKernelWithTheInterpretersElements) {
  // The pipeline, smaller: 1,000 elements, every seventh dropped.
  expect_kernel_matches_interpreter("range(1000) | map(r => { y: r.value * 3 + 1 }) | filter(r => r.y % 7 != 0)", 857);
  // Several fields of several dtypes and shapes, and a predicate that reads more than one.
  expect_kernel_matches_interpreter(
      "range(-50, 150) | map(r => { a: f32(r.value) * 0.25, v: [r.value, r.value * 2, -r.value], "
      "b: r.value % 3 == 0, s: u8(r.value % 256) }) | filter(r => r.a > 3.0 || r.b)",
      158);
  // A batched element (the map after the batch is not moved: the filter reads it).
  expect_kernel_matches_interpreter(
      "range(100) | batch(4, drop_remainder = true) | map(r => { v: r.value * 2, m: sum(r.value) }) | "
      "filter(r => r.m % 3 != 0)",
      16);
  // Random ops in the map are keyed by the element index, as on the interpreter.
  expect_kernel_matches_interpreter(
      "range(300) | map(r => { x: r.value, u: random_uniform([3], -1.0, 1.0) }) | filter(r => r.u[0] < 0.25)", 187);
}

TEST(MapFilterKernel, FiltersThatKeepEveryElementOrNoneMatchTheInterpreter) {
  expect_kernel_matches_interpreter("range(500) | map(r => { y: r.value * 5 }) | filter(r => r.y >= 0)", 500);
  expect_kernel_matches_interpreter("range(500) | map(r => { y: r.value * 5 }) | filter(r => r.y < 0)", 0);
}

// A fixed-length bytes field reaches the kernel as u8 rows (runtime/exec/stages/native_call.cpp).
TEST(MapFilterKernel, FixedLengthRecordsRunOnTheKernel) {
  testing::ScratchDir d;
  std::string bytes;
  for (int i = 0; i < 160; ++i) bytes.push_back(static_cast<char>((i * 37 + 11) % 256));
  testing::write_file(d / "r.bin", bytes);
  expect_kernel_matches_interpreter(
      "fixed_length_records(\"" + (d / "r.bin").string() +
          "\", record_bytes = 4) | map(r => { rec: r.record, s: i64(r.record[0]) + i64(r.record[3]) * 2 }) | "
          "filter(r => r.s % 3 != 0)",
      17);
}

// A map that makes a byte string has no kernel: the fused stage runs on the interpreter and says why.
TEST(MapFilterKernel, AByteStringResultStaysOnTheInterpreterWithTheReason) {
  const std::string spec =
      "pipeline p = range(20) | map(r => { s: \"row\", n: r.value }) | filter(r => r.n % 2 == 0)\n";
  CompileResult r = compile_text("test.pipe", spec, "", with_kernels(CpuKernels::Jit));
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  const Plan& plan = r.pipelines[0].plan;
  const int s = map_filter_stage(plan);
  ASSERT_GE(s, 0) << print_plan(plan);
  EXPECT_EQ(plan.stages[static_cast<size_t>(s)].native, nullptr);
  codegen::LoopNest nest;
  std::string why;
  EXPECT_FALSE(codegen::stage_loop_nest(plan, s, nest, why));
  EXPECT_NE(why.find("bytes"), std::string::npos) << why;
  ASSERT_EQ(r.pipelines[0].jit->stages.size(), 1u);
  EXPECT_EQ(r.pipelines[0].jit->stages[0].why_not, why);
  EXPECT_EQ(run_exact(plan, 3, 2), run_exact(testing::compiled_plan(spec), 1, 1));
}

// The kernel's index check fails for element 4; the interpreter runs the chunk and the error names the
// fused stage (at the map's location), the op and the element, as without the JIT.
TEST(MapFilterKernel, AnErrorInTheMapNamesTheStage) {
  const std::string spec =
      "const V = [10, 20, 30]\n"
      "pipeline p = range(9) | map(r => { w: V[r.value % 5 - 1] }) | filter(r => r.w > 10)\n";
  std::string messages[2];
  for (int k = 0; k < 2; ++k) {
    const Plan plan = testing::compiled_plan(spec, "", with_kernels(k == 0 ? CpuKernels::Jit : CpuKernels::None));
    const int s = map_filter_stage(plan);
    ASSERT_GE(s, 0) << print_plan(plan);
    EXPECT_EQ(plan.stages[static_cast<size_t>(s)].native != nullptr, k == 0);
    try {
      run_exact(plan, 64, 2);
      ADD_FAILURE() << "the run did not fail";
    } catch (const std::exception& e) {
      messages[k] = e.what();
    }
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_EQ(messages[0],
            "test.pipe:2:25: map_filter: test.pipe:2:39: dynamic_index: element 4: index 3 is out of range for a "
            "dimension of size 3");
}

// The runtime reads a map_filter's last result as one flag byte per row: a function whose last result
// is anything else (no spec makes one) gets no kernel.
TEST(MapFilterKernel, ALastResultOtherThanOneBoolPerRowGetsNoKernel) {
  for (int bad = 0; bad < 2; ++bad) {
    testing::FnBuilder b;
    const int x = b.param("x", DType::I64, {});
    b.result("y", b.op("neg", {x}, DType::I64, {}));
    const int two = b.op("stack", {x, x}, DType::I64, {2});
    b.result("keep", bad == 0 ? x : b.op("gt", {two, two}, DType::Bool, {2}));
    Plan p = testing::one_map_plan(b, "map_filter");
    codegen::LoopNest nest;
    std::string why;
    EXPECT_FALSE(codegen::stage_loop_nest(p, 1, nest, why)) << bad;
    EXPECT_EQ(why, "the fused filter's keep flag is not one bool per element") << bad;
  }
  testing::FnBuilder good;
  const int x = good.param("x", DType::I64, {});
  good.result("y", good.op("neg", {x}, DType::I64, {}));
  good.result("keep", good.op("gt", {x, x}, DType::Bool, {}));
  codegen::LoopNest nest;
  std::string why;
  EXPECT_TRUE(codegen::stage_loop_nest(testing::one_map_plan(good, "map_filter"), 1, nest, why)) << why;
  EXPECT_EQ(nest.outputs.size(), 2u);
}

// `pipec build`'s object file holds the fused stage's kernel too.
TEST(MapFilterKernel, TheObjectFileHoldsTheFusedKernel) {
  Plan plan =
      testing::compiled_plan("pipeline p = range(100) | map(r => { y: r.value * 3 + 1 }) | filter(r => r.y % 7 != 0)\n",
                             "", with_kernels(CpuKernels::None));
  const int s = map_filter_stage(plan);
  ASSERT_GE(s, 0) << print_plan(plan);
  testing::ScratchDir d;
  EXPECT_EQ(codegen::emit_kernels_object(plan, (d / "kernels.o").string()), 1);
  const Stage& fused = plan.stages[static_cast<size_t>(s)];
  ASSERT_NE(fused.native, nullptr);
  EXPECT_EQ(fused.native->symbol, codegen::kernel_symbol(s));
  EXPECT_EQ(fused.native->backend, "aot");
}

// A map after to(gpu) keeps its CUDA kernel: the filter after it is not fused into it.
TEST(MapFilterKernel, AMapAfterToGpuIsNotFused) {
  const Plan plan = testing::compiled_plan(
      "pipeline p = range(10) | to(gpu) | map(r => { y: f32(r.value) * 2.0 }) | filter(r => r.y > 3.0)\n", "",
      with_kernels(CpuKernels::None));
  EXPECT_EQ(map_filter_stage(plan), -1) << print_plan(plan);
}

// `pipec run` reports the fused stage's kernel; `pipec explain` says it compiles.
TEST(MapFilterKernel, RunAndExplainShowTheKernel) {
  testing::ScratchDir d;
  setenv("PIPEC_CACHE_DIR", (d.path() / "cache").c_str(), 1);
  testing::write_file(
      d / "p.pipe",
      "pipeline p = range(100000) | map(r => { y: r.value * 3 + 1 }) | filter(r => r.y % 7 != 0) | batch(1024)\n");
  auto run = testing::run_pipec({"run", (d / "p.pipe").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("compiled 1 kernel in"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("no kernels"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("map_filter"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("[llvm-jit]"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("84 batches (85,714 examples)"), std::string::npos) << run.err;
  auto explain = testing::run_pipec({"explain", (d / "p.pipe").string()});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("#1 map_filter: compiled (pipec_kernel_1)"), std::string::npos) << explain.out;
  auto no_jit = testing::run_pipec({"run", (d / "p.pipe").string(), "--no-jit"});
  ASSERT_EQ(no_jit.exit_code, 0) << no_jit.err;
  EXPECT_NE(no_jit.err.find("[interpreter]"), std::string::npos) << no_jit.err;
  unsetenv("PIPEC_CACHE_DIR");
}

}  // namespace
}  // namespace pipec

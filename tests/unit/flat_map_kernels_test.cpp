// flat_map's inner pipelines go through the compilation the plan holding them does: the optimizer's
// passes (but prefetch_injection) and, at -O1, a JIT kernel for each map and filter, nested flat_maps
// included; -O0 and --no-jit leave them as lowered, on the interpreter; the kernels give the
// interpreter's elements; `pipec build` puts them into the object file under symbols of their own.
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/codegen/llvm/aot.h"
#include "compiler/driver/build_library.h"
#include "runtime/capi/pipe_handle.h"
#include "runtime/plan/plan_serialize.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;

CompileOptions jit_options(int opt_level = 1) {
  CompileOptions o;
  o.passes.opt_level = opt_level;
  o.cpu_kernels = CpuKernels::Jit;
  o.jit.use_cache = false;
  return o;
}

// The first flat_map stage of `plan`.
const Stage& flat_map_of(const Plan& plan) {
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::FlatMap) return s;
  throw std::runtime_error("no flat_map in the plan");
}

// How many stages of `plan` (inner pipelines included) run a kernel the JIT made.
int jit_stages(const Plan& plan) {
  int n = 0;
  for (const Stage& s : plan.stages) {
    if (s.inner) n += jit_stages(*s.inner);
    if (s.native && s.native->fn && s.native->backend == "llvm-jit") ++n;
  }
  return n;
}

int stages_of_kind(const Plan& plan, StageKind kind) {
  int n = 0;
  for (const Stage& s : plan.stages) n += s.kind == kind ? 1 : 0;
  return n;
}

std::string spec(const std::string& pipeline) { return "pipeline p = " + pipeline + "\n"; }

TEST(FlatMapKernels, InnerMapsAndFiltersRunOnJitKernelsWithTheInterpretersElements) {
  const std::vector<std::string> cases = {
      "range(12) | flat_map(r => range(r.value) | map(q => { v: q.value * 2 }))",
      "range(12) | flat_map(r => range(r.value) | filter(q => q.value % 3 != 1) | "
      "map(q => { v: q.value * 3, w: f32(q.value) * 0.5 }) | batch(2))",
      "range(1, 9) | map(r => { lo: r.value * 10, hi: r.value * 11 }) | "
      "interleave(r => range(r.lo, r.hi) | map(q => { v: q.value + 1 }), cycle_length = 3, block_length = 2) | "
      "map(r => { v: r.v * 2 })",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    CompileResult r = compile_text("test.pipe", spec(pipeline), "", jit_options());
    ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
    const Plan& plan = r.pipelines[0].plan;
    const codegen::JitReport& jit = *r.pipelines[0].jit;
    int inner = 0;
    for (const codegen::StageJitStatus& st : jit.stages) {
      EXPECT_TRUE(st.native) << st.where() << ": " << st.why_not;
      inner += st.within.empty() ? 0 : 1;
    }
    EXPECT_GE(inner, 1);
    const Plan& element = *flat_map_of(plan).inner;
    EXPECT_EQ(jit_stages(element), inner) << print_plan(element);
    EXPECT_EQ(stages_of_kind(element, StageKind::Prefetch), 0) << print_plan(element);

    const Elements want = testing::run_plan_text(testing::compiled_plan(spec(pipeline)), 3);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(testing::run_plan_text(plan, 3), want);
    EXPECT_EQ(testing::run_plan_text(plan, 64, 4), want);
  }
}

TEST(FlatMapKernels, NestedFlatMapsAreCompiledAllTheWayDown) {
  const std::string pipeline =
      "range(5) | flat_map(r => range(r.value) | flat_map(q => range(q.value) | map(x => { y: x.value * 7 })) | "
      "map(x => { y: x.y + 1 }))";
  CompileResult r = compile_text("test.pipe", spec(pipeline), "", jit_options());
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  const Plan& plan = r.pipelines[0].plan;
  const codegen::JitReport& jit = *r.pipelines[0].jit;
  ASSERT_EQ(jit.stages.size(), 2u);
  for (const codegen::StageJitStatus& st : jit.stages) EXPECT_TRUE(st.native) << st.where() << ": " << st.why_not;
  EXPECT_EQ(jit.stages[0].within.size(), 2u) << jit.stages[0].where();
  EXPECT_EQ(jit.stages[1].within.size(), 1u) << jit.stages[1].where();
  EXPECT_EQ(jit.compiled + jit.cached, 2);
  EXPECT_EQ(jit_stages(plan), 2);
  EXPECT_EQ(jit_stages(*flat_map_of(*flat_map_of(plan).inner).inner), 1);
  EXPECT_EQ(testing::run_plan_text(plan, 4), testing::run_plan_text(testing::compiled_plan(spec(pipeline)), 4));
}

// The inner pipeline is optimized as a pipeline is: here map_fusion makes its two maps one.
TEST(FlatMapKernels, TheInnerPipelineIsOptimizedAtO1AndLeftAsLoweredAtO0) {
  const std::string pipeline =
      "range(6) | flat_map(r => range(r.value, 10) | map(q => { v: q.value * 2 }) | map(q => { w: q.v + 1 }))";
  const Plan o1 = testing::compiled_plan(spec(pipeline), "", jit_options(1));
  EXPECT_EQ(stages_of_kind(*flat_map_of(o1).inner, StageKind::Map), 1) << print_plan(o1);
  EXPECT_EQ(jit_stages(o1), 1);
  const Value* bind = flat_map_of(o1).arg("bind");
  ASSERT_NE(bind, nullptr);
  EXPECT_EQ(flat_map_of(o1).inner->stages.at(static_cast<size_t>(bind->items.at(0).items.at(0).i)).kind,
            StageKind::Range);

  // -O0 is the reference: the inner pipeline as lowered, every body on the interpreter, whatever the JIT option says.
  const Plan o0 = testing::compiled_plan(spec(pipeline), "", jit_options(0));
  EXPECT_EQ(stages_of_kind(*flat_map_of(o0).inner, StageKind::Map), 2) << print_plan(o0);
  EXPECT_EQ(jit_stages(o0), 0);
  // --no-jit: optimized, interpreted.
  CompileOptions no_jit = jit_options(1);
  no_jit.cpu_kernels = CpuKernels::None;
  const Plan interpreted = testing::compiled_plan(spec(pipeline), "", no_jit);
  EXPECT_EQ(stages_of_kind(*flat_map_of(interpreted).inner, StageKind::Map), 1);
  EXPECT_EQ(jit_stages(interpreted), 0);

  const Elements want = testing::run_plan_text(o0, 5);
  EXPECT_EQ(testing::run_plan_text(o1, 5), want);
  EXPECT_EQ(testing::run_plan_text(interpreted, 5), want);
}

// The stages `bind` names are followed through the passes; when a pass removes one, the inner pipeline
// is kept as lowered rather than binding the element's values into another stage.
TEST(FlatMapKernels, APassThatRemovesABoundStageLeavesTheInnerPipelineAsLowered) {
  const Plan lowered =
      testing::compiled_plan(spec("range(3) | flat_map(r => range(r.value) | map(q => { value: q.value }))"));
  Plan optimized = lowered;
  run_passes(optimized, PassOptions{});
  EXPECT_EQ(flat_map_of(optimized).inner->stages.size(), 1u) << "noop_elimination removes the identity map";
  EXPECT_EQ(flat_map_of(optimized).arg("bind")->items.at(0).items.at(0).i, 0);

  // The same plan with the binding moved onto the identity map (no spec gives this).
  Plan moved = lowered;
  for (Stage& s : moved.stages)
    for (auto& [name, value] : s.args)
      if (name == "bind") value.items.at(0).items.at(0) = Value::make_int(1);
  run_passes(moved, PassOptions{});
  EXPECT_EQ(flat_map_of(moved).inner->stages.size(), 2u) << print_plan(moved);
  EXPECT_EQ(flat_map_of(moved).arg("bind")->items.at(0).items.at(0).i, 1);
  EXPECT_EQ(print_plan(*flat_map_of(moved).inner), print_plan(*flat_map_of(lowered).inner));
}

// A run resumed from a checkpoint rebuilds each open element's pipeline from the compiled inner plan.
TEST(FlatMapKernels, AResumedRunContinuesOnTheKernels) {
  const Plan plan = testing::compiled_plan(
      spec("range(1, 7) | interleave(r => range(r.value) | map(q => { v: q.value * 5 + 1 }), cycle_length = 2, "
           "block_length = 2)"),
      "", jit_options());
  ASSERT_EQ(jit_stages(plan), 1);
  testing::expect_resumes_after_every_element(plan);
}

// `pipec build`: the inner map's kernel goes into the object file as pipec_kernel_<flat_map>_<stage>, the
// serialized plan names it, the library's table lists it and binding finds it.
TEST(FlatMapKernels, TheObjectFileHoldsTheInnerKernelsUnderTheirOwnSymbols) {
  CompileOptions optimized = jit_options(1);
  optimized.cpu_kernels = CpuKernels::None;
  Plan plan = testing::compiled_plan(spec("range(4) | flat_map(r => range(r.value) | map(q => { v: q.value * 2 }))"),
                                     "", optimized);
  testing::ScratchDir d;
  ASSERT_EQ(codegen::emit_kernels_object(plan, (d / "kernels.o").string()), 1);
  int flat_map = -1;
  for (size_t i = 0; i < plan.stages.size(); ++i)
    if (plan.stages[i].inner) flat_map = static_cast<int>(i);
  ASSERT_GE(flat_map, 0);
  const std::string symbol = "pipec_kernel_" + std::to_string(flat_map) + "_1";
  const Stage& map = plan.stages[static_cast<size_t>(flat_map)].inner->stages.at(1);
  ASSERT_NE(map.native, nullptr);
  EXPECT_EQ(map.native->symbol, symbol);
  EXPECT_EQ(map.native->backend, "aot");

  Plan back = decode_plan(encode_plan(plan), "test");
  EXPECT_EQ(back.stages[static_cast<size_t>(flat_map)].inner->stages.at(1).native->symbol, symbol);
  EXPECT_NE(embedded_plan_source(back, "/data", "pipec_embedded_plan").find("{\"" + symbol + "\", " + symbol + "}"),
            std::string::npos);

  // Binding: the symbol's function is set in a copy of the inner plan; a library without it is refused.
  const PipecKernelFn fake = [](const PipecKernelArgs*) -> int32_t { return 0; };
  const std::vector<KernelSymbol> table = {{symbol.c_str(), fake}};
  EXPECT_EQ(bind_kernels(back, table), 1);
  EXPECT_EQ(back.stages[static_cast<size_t>(flat_map)].inner->stages.at(1).native->fn, fake);
  Plan missing = decode_plan(encode_plan(plan), "test");
  EXPECT_THROW(bind_kernels(missing, {}), std::runtime_error);
}

// `pipec run`'s summary: the kernel count has the inner map's, and the flat_map's row says what runs
// each element's bodies; -O0 and --no-jit run them on the interpreter.
TEST(FlatMapKernels, TheRunSummarySaysWhatRunsTheInnerPipeline) {
  testing::ScratchDir d;
  testing::write_file(d / "f.pipe",
                      "pipeline f = range(100) | flat_map(r => range(r.value) | map(q => { v: q.value * 2 }))\n");
  const std::string spec_path = (d / "f.pipe").string();
  auto jit = testing::run_pipec({"run", spec_path});
  ASSERT_EQ(jit.exit_code, 0) << jit.err;
  EXPECT_NE(jit.err.find("4,950 elements"), std::string::npos) << jit.err;
  EXPECT_EQ(jit.err.find("no kernels"), std::string::npos) << jit.err;
  EXPECT_NE(jit.err.find("[each element: #1 map llvm-jit]"), std::string::npos) << jit.err;
  for (const char* flag : {"-O0", "--no-jit"}) {
    auto interpreted = testing::run_pipec({"run", spec_path, flag});
    ASSERT_EQ(interpreted.exit_code, 0) << flag << "\n" << interpreted.err;
    EXPECT_NE(interpreted.err.find("4,950 elements"), std::string::npos) << interpreted.err;
    EXPECT_NE(interpreted.err.find("[each element: #1 map interpreter]"), std::string::npos) << flag << "\n"
                                                                                             << interpreted.err;
  }
  auto explain = testing::run_pipec({"explain", spec_path});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("    #1.1 map: compiled (pipec_kernel_1_1)"), std::string::npos) << explain.out;
}

}  // namespace
}  // namespace pipec

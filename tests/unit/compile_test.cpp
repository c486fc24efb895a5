// compile() (compiler/compile): the one path from a spec to plans, its targets, its statuses, and the
// steps it runs in order (lowered plan seen before any pass; kernels only above -O0).
#include <gtest/gtest.h>

#include "compiler/compile/compile.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

const char* kTwo =
    "pipeline a = range(10) | map(r => { x: f32(r.value) * 2.0 }) | batch(2)\n"
    "pipeline b = range(5)\n";

CompileRequest text_request(const std::string& text, CompileTarget target, const std::string& pipeline = "") {
  CompileRequest r;
  r.path = "spec.pipe";
  r.text = text;
  r.target = target;
  r.pipeline = pipeline;
  return r;
}

TEST(Compile, CheckOnlyGivesTheProgramAndNoPlans) {
  CompileResult r = compile(text_request(kTwo, CompileTarget::CheckOnly));
  EXPECT_TRUE(r.ok()) << testing::compile_problems(r);
  ASSERT_NE(r.program, nullptr);
  EXPECT_NE(r.program->global("a"), nullptr);
  EXPECT_TRUE(r.pipelines.empty());
}

TEST(Compile, EveryPipelineInOrderAndOneByName) {
  CompileResult all = compile(text_request(kTwo, CompileTarget::EveryPipeline));
  ASSERT_TRUE(all.ok()) << testing::compile_problems(all);
  ASSERT_EQ(all.pipelines.size(), 2u);
  EXPECT_EQ(all.pipelines[0].decl->name, "a");
  EXPECT_EQ(all.pipelines[1].decl->name, "b");
  CompileResult one = compile(text_request(kTwo, CompileTarget::OnePipeline, "b"));
  ASSERT_TRUE(one.ok()) << testing::compile_problems(one);
  ASSERT_EQ(one.pipelines.size(), 1u);
  EXPECT_EQ(one.pipelines[0].decl->name, "b");
}

TEST(Compile, StatusesSayWhichStepStopped) {
  CompileResult none = compile(text_request(kTwo, CompileTarget::OnePipeline, "c"));
  EXPECT_EQ(none.status, CompileStatus::NoPipeline);
  EXPECT_EQ(none.error, "no pipeline named `c`; the spec declares: a b");
  CompileResult several = compile(text_request(kTwo, CompileTarget::OnePipeline));
  EXPECT_EQ(several.status, CompileStatus::NoPipeline);
  EXPECT_NE(several.error.find("choose one with --pipeline"), std::string::npos) << several.error;
  CompileResult empty = compile(text_request("const A = 1\n", CompileTarget::EveryPipeline));
  EXPECT_EQ(empty.status, CompileStatus::NoPipeline);
  CompileResult bad = compile(text_request("pipeline p = range(x)\n", CompileTarget::OnePipeline));
  EXPECT_EQ(bad.status, CompileStatus::SpecErrors);
  EXPECT_TRUE(bad.program->diags.has_errors());
  EXPECT_TRUE(bad.pipelines.empty());
  CompileRequest missing;
  missing.path = "/no/such/spec.pipe";
  CompileResult unreadable = compile(missing);
  EXPECT_EQ(unreadable.status, CompileStatus::Unreadable);
  EXPECT_NE(unreadable.error.find("cannot read /no/such/spec.pipe"), std::string::npos) << unreadable.error;
}

TEST(Compile, TheLoweredPlanIsSeenBeforeEveryPassAndO0StopsThere) {
  CompileRequest req = text_request(kTwo, CompileTarget::OnePipeline, "a");
  std::vector<std::string> steps;
  std::string lowered;
  req.options.on_lowered = [&](const Decl& d, const Plan& p) {
    steps.push_back("lowered " + d.name);
    lowered = print_plan(p);
  };
  req.options.passes.log = [&](const std::string& pass, bool, const Plan&) { steps.push_back(pass); };
  CompileResult opt = compile(req);
  ASSERT_TRUE(opt.ok()) << testing::compile_problems(opt);
  ASSERT_EQ(steps.size(), pass_list().size() + 1);
  EXPECT_EQ(steps[0], "lowered a");
  EXPECT_EQ(steps[1], pass_list()[0].name);
  EXPECT_NE(print_plan(opt.pipelines[0].plan), lowered);  // the optimizer changed it (prefetch at least)

  steps.clear();
  req.options.passes.opt_level = 0;
  CompileResult o0 = compile(req);
  ASSERT_TRUE(o0.ok());
  EXPECT_EQ(steps, std::vector<std::string>{"lowered a"});
  EXPECT_EQ(print_plan(o0.pipelines[0].plan), lowered);
}

TEST(Compile, KernelsOnlyAboveO0) {
  testing::ScratchDir d;
  CompileRequest req = text_request(kTwo, CompileTarget::OnePipeline, "a");
  req.options.cpu_kernels = CpuKernels::Jit;
  req.options.jit.use_cache = false;
  CompileResult jit = compile(req);
  ASSERT_TRUE(jit.ok()) << testing::compile_problems(jit);
  ASSERT_TRUE(jit.pipelines[0].jit.has_value());
  EXPECT_EQ(jit.pipelines[0].jit->compiled, 1);
  req.options.passes.opt_level = 0;
  CompileResult reference = compile(req);
  ASSERT_TRUE(reference.ok());
  EXPECT_FALSE(reference.pipelines[0].jit.has_value());
  for (const Stage& s : reference.pipelines[0].plan.stages) EXPECT_EQ(s.native, nullptr) << stage_name(s.kind);

  req.options.passes.opt_level = 1;
  req.options.cpu_kernels = CpuKernels::Object;
  req.options.object_path = (d / "k.o").string();
  CompileResult object = compile(req);
  ASSERT_TRUE(object.ok()) << testing::compile_problems(object);
  EXPECT_EQ(object.pipelines[0].object_kernels, 1);
  EXPECT_TRUE(std::filesystem::exists(d / "k.o"));
  req.options.object_path = (d / "no/such/dir/k.o").string();
  CompileResult unwritable = compile(req);
  EXPECT_EQ(unwritable.status, CompileStatus::InternalError);
  EXPECT_NE(unwritable.error.find("code generation failed"), std::string::npos) << unwritable.error;
  EXPECT_EQ(unwritable.error_decl, unwritable.program->global("a"));  // where the language server shows it
}

// `pipec check` and the language server compile with it: the check and the train blocks' step graphs,
// never a kernel (the editor compiles on every keystroke).
TEST(Compile, CheckRequestIsTheCheckWithoutKernels) {
  CheckOptions quiet;
  quiet.warnings = false;
  CompileRequest buffer = check_request("spec.pipe", quiet, std::string(kTwo));
  EXPECT_EQ(buffer.target, CompileTarget::CheckOnly);
  EXPECT_EQ(buffer.path, "spec.pipe");
  EXPECT_EQ(buffer.text, std::optional<std::string>(kTwo));
  EXPECT_FALSE(buffer.options.check.warnings);
  EXPECT_EQ(buffer.options.cpu_kernels, CpuKernels::None);
  EXPECT_EQ(buffer.options.device, DevicePolicy::Cpu);
  EXPECT_FALSE(check_request("spec.pipe").text);  // read from the file

  const std::string train =
      "source s = tfrecord(\"data/*.tfrecord\") { x: f32[4], y: f32[2] }\n"
      "pipeline p = s | batch(8, drop_remainder = true)\n"
      "model net(x: f32[4]) -> f32[2] { x | dense(2) }\n"
      "train fit = { data = p, model = net(x), loss = mse(y), optimizer = adam() }\n";
  CompileResult r = compile(check_request("spec.pipe", {}, train));
  ASSERT_TRUE(r.ok()) << testing::compile_problems(r);
  ASSERT_EQ(r.trains.size(), 1u);
  EXPECT_EQ(r.trains[0].decl, r.program->global("fit"));
  EXPECT_TRUE(r.pipelines.empty());
  EXPECT_EQ(r.error_decl, nullptr);
}

TEST(Compile, GpuKernelsUnlessTheDeviceIsTheCpu) {
  const std::string spec = "pipeline p = range(8) | to(gpu) | map(r => { y: f32(r.value) * 2.0 })\n";
  CompileRequest req = text_request(spec, CompileTarget::OnePipeline);
  req.options.device = DevicePolicy::Auto;
  CompileResult gpu = compile(req);
  ASSERT_TRUE(gpu.ok()) << testing::compile_problems(gpu);
  EXPECT_EQ(gpu.pipelines[0].gpu_kernels, 1);
  req.options.device = DevicePolicy::Cpu;
  CompileResult cpu = compile(req);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu.pipelines[0].gpu_kernels, 0);
  for (const Stage& s : cpu.pipelines[0].plan.stages) EXPECT_FALSE(s.gpu) << stage_name(s.kind);
}

}  // namespace
}  // namespace pipec

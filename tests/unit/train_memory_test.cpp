// The liveness plan of a training step (runtime/model/step_memory.h): its figures, and a step too large
// for the machine reported before step 1 with them; and the run's whole plan
// (runtime/train/loop/train_memory_plan.h), part by part, as `pipec run` prints it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compiler/compile/compile.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/model/step_arena.h"
#include "runtime/model/step_memory.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/loop/train_memory_plan.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

TEST(TrainMemory, FlatBuffersAndPeakOfASmallStep) {
  TrainProgram t = testing::compile_train(R"(source s = tfrecord("x.tfrecord") { x: f32[4], y: f32[1] }
pipeline data = s | batch(2, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(3) | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(), steps = 1 }
)");
  const ModelGraph& g = t.step;
  ASSERT_EQ(g.param_elements(), 4 * 3 + 3 + 3 + 1);
  StepMemory m = step_memory(g, 2);
  // Adam: parameters, gradients, m and v, 4 bytes each.
  EXPECT_EQ(m.flat_bytes, 19 * 4 * 4);
  // Batch of 2: x [2, 4] and y [2, 1] are held throughout; the dense outputs [2, 3] and [2, 1], the
  // loss, and the gradients [2, 1] and [2, 3] come and go. The peak holds at least the inputs and the
  // hidden activation, and never more than every value at once.
  int64_t all = 0;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].role != ValueRole::Param && g.values[v].grad_of < 0)
      all += 4 * std::max<int64_t>(shape_num_elements(g.full_shape(static_cast<int>(v), 2)), 1);
  EXPECT_GE(m.peak_activation_bytes, 4 * (8 + 2 + 6));
  EXPECT_LT(m.peak_activation_bytes, all);
  EXPECT_GE(m.peak_node, 0);
  // Twice the batch, twice the batched values (the scalar loss stays 4 bytes).
  const int64_t peak4 = step_memory(g, 4).peak_activation_bytes;
  EXPECT_LE(peak4, 2 * m.peak_activation_bytes);
  EXPECT_GE(peak4, 2 * m.peak_activation_bytes - 8);
}

// global_clipnorm scales the gradients as the optimizer reads them (4096 at a time per thread), so it
// needs no parameter-sized copy: the flat buffers are the same as without it.
TEST(TrainMemory, ClippingNeedsNoCopyOfTheGradients) {
  const std::string spec = R"(source s = tfrecord("x.tfrecord") { x: f32[4], y: f32[1] }
pipeline data = s | batch(2, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(3) | dense(1) }
)";
  TrainProgram plain = testing::compile_train(
      spec + "train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 1 }\n");
  TrainProgram clipped = testing::compile_train(
      spec +
      "train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(global_clipnorm = 1.0), steps = 1 }\n");
  // Parameters and gradients, both.
  EXPECT_EQ(step_memory(plain.step, 2).flat_bytes, 19 * 2 * 4);
  EXPECT_EQ(step_memory(clipped.step, 2).flat_bytes, 19 * 2 * 4);
}

TEST(TrainMemory, StepTooLargeIsReportedBeforeStepOne) {
  testing::ScratchDir d;
  // 2^20 examples through dense(100000): 400 GB of activations, far beyond any machine that runs the
  // tests; the run must stop before allocating the 1.6 GB of weights or reading a batch.
  testing::write_file(d / "big.pipe", R"(pipeline data = range(1_048_576)
  | map(r => {
      x = random_uniform([1000], -1.0, 1.0, seed = 1)
      { x, y: [sum(x)] }
    })
  | batch(1_048_576, drop_remainder = true)
model net(x: f32[1000]) -> f32[1] { x | dense(100000) | relu | dense(1) }
train big = { data = data, model = net(x), loss = mse(y), optimizer = adam(), steps = 1 }
)");
  auto r = testing::run_pipec({"run", (d / "big.pipe").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("train `big`: a step of 1048576 examples needs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("activations and gradients"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("of memory is available"), std::string::npos) << r.err;
}

// The plan before step 1 (runtime/train/loop/train_memory_plan.h): each part from the thing that
// holds it, counted once. 8 examples of x f32[4] and y f32[1] per batch.
const char* kPlanSpec = R"(pipeline data = range(64)
  | map(r => {
      x = random_uniform([4], -1.0, 1.0, seed = 1)
      { x, y: [sum(x)] }
    })
  | batch(8, drop_remainder = true)
  | prefetch(2)
model net(x: f32[4]) -> f32[1] { x | dense(3) | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(), steps = 1 }
)";

TEST(TrainMemory, PlanCountsEachPartOnce) {
  CompileRequest request;
  request.path = "plan.pipe";
  request.text = kPlanSpec;
  request.target = CompileTarget::Train;
  CompileResult r = compile(request);
  ASSERT_TRUE(r.ok()) << r.error;
  const TrainProgram& t = r.trains.at(0).program;
  const ModelGraph& g = t.step;
  ASSERT_EQ(g.batch, 8);
  RunOptions ro;
  ro.threads = 2;
  PipelineRun data(r.pipelines.at(0).plan, ro);
  const StepMemory m = step_memory(g, 8);

  // The reference executor has no kernels of its own: the graph's block.
  ReferenceExecutor<float> ref(g, 1);
  const TrainMemoryPlan p = plan_train_memory(t, ref, data, nullptr, 50'000'000);
  EXPECT_EQ(p.rows, 8);
  EXPECT_EQ(p.process, 50'000'000);
  EXPECT_EQ(p.flat, m.flat_bytes);
  EXPECT_EQ(p.values, m.arena_bytes);
  EXPECT_TRUE(p.kernels.empty());
  EXPECT_EQ(p.batch, 8 * 5 * 4);  // the chunk the loop holds: x and y of 8 examples
  EXPECT_EQ(p.input_pipeline, static_cast<int64_t>(data.steady_holdings().bytes));
  EXPECT_GE(p.input_pipeline, 3 * 8 * 5 * 4);  // prefetch(2): two batches and the one its producer holds
  EXPECT_EQ(p.evaluation, 0);
  EXPECT_EQ(p.total(), p.process + p.flat + p.values + p.batch + p.input_pipeline);
  const std::string text = p.text();
  for (const char* part : {"for steps of 8: process 50.0 MB, weights and optimizer", "activations and gradients",
                           "batch 160 bytes", "input pipeline"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " in " << text;
  EXPECT_EQ(text.find("kernels"), std::string::npos) << text;

  // The fast executor's own block and its kernels, by part.
  FastExecutor fast(g, 1);
  const TrainMemoryPlan f = plan_train_memory(t, fast, data, nullptr, 0);
  EXPECT_EQ(f.values, plan_step_arena(g, 8, fast.first_writes(), fast.last_uses()).bytes);
  ASSERT_FALSE(f.kernels.empty());
  EXPECT_EQ(f.kernels.front().first, "oneDNN scratchpad");
  EXPECT_EQ(f.total(), f.flat + f.values + f.kernel_bytes() + f.batch + f.input_pipeline);
  EXPECT_NE(f.text().find(", kernels "), std::string::npos) << f.text();
}

// `pipec run` prints the plan in its summary, beside the resident peak, and --stats-json has its parts.
TEST(TrainMemory, RunSummaryAndStatsJsonHaveThePlanAndThePeak) {
  testing::ScratchDir d;
  testing::write_file(d / "plan.pipe", kPlanSpec);
  auto r = testing::run_pipec({"run", (d / "plan.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("  memory      planned "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("% of the plan)"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(testing::read_all(d / "s.json"));
  const nlohmann::json& mem = j.at("memory");
  int64_t sum = 0;
  for (const auto& [name, bytes] : mem.at("parts").items()) sum += bytes.get<int64_t>();
  EXPECT_EQ(mem.at("planned_bytes").get<int64_t>(), sum);
  EXPECT_EQ(mem.at("rows").get<int64_t>(), 8);
  EXPECT_GT(mem.at("parts").at("process").get<int64_t>(), 1'000'000);  // the program itself is resident
  int64_t kernels = 0;
  for (const auto& [name, bytes] : mem.at("kernels").items()) kernels += bytes.get<int64_t>();
  EXPECT_EQ(mem.at("parts").at("kernels").get<int64_t>(), kernels);
  EXPECT_GE(mem.at("peak_resident_bytes").get<int64_t>(), mem.at("parts").at("process").get<int64_t>());
}

}  // namespace
}  // namespace pipec

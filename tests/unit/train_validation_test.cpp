// `validation`, `eval_every` and `metrics`: the evaluation graph runs the model in inference mode
// (batch_norm on its moving statistics, dropout passing everything), the metrics mean what Keras' mean,
// and `pipec run` reports every evaluation in the summary and --stats-json.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "compiler/compile/compile.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/loop/evaluate.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

using testing::read_all;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
namespace fs = std::filesystem;

Tensor f32_tensor(const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::empty(DType::F32, shape);
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

Tensor i64_tensor(const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty(DType::I64, shape);
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

const char* kBatchNormDropout = R"(source s = tfrecord("data/*.tfrecord") { x: f32[2], y: f32[2] }
pipeline p = s | batch(3, drop_remainder = true)
model m(x: f32[2]) -> f32[2] { x | batch_norm | dropout(0.5) }
train t = { data = p, model = m(x), loss = mse(y), optimizer = sgd(), validation = p, metrics = [mae] }
)";

// y = (x - moving_mean) / sqrt(moving_variance + 1e-3) per example, whatever the batch's statistics,
// and nothing dropped or scaled; the training step's graph still normalizes with the batch.
TEST(TrainValidation, InferenceModeUsesMovingStatisticsAndKeepsEverything) {
  TrainProgram t = testing::compile_train(kBatchNormDropout);
  ASSERT_TRUE(t.eval.has_value());
  const ModelGraph& g = t.eval->graph;
  ReferenceExecutor<float> ex(g, 7);
  auto& buf = ex.buffers();
  auto set = [&](const std::string& name, std::vector<float> values) {
    for (int v : g.params)
      if (g.values[v].name == name) std::copy(values.begin(), values.end(), buf.params.begin() + g.values[v].offset);
    for (int v : g.states)
      if (g.values[v].name == name) std::copy(values.begin(), values.end(), buf.states.begin() + g.values[v].offset);
  };
  set("batch_normalization/gamma", {1, 2});
  set("batch_normalization/beta", {0, 1});
  set("batch_normalization/moving_mean", {1, 2});
  set("batch_normalization/moving_variance", {4, 9});
  Tensor x = f32_tensor({3, 2}, {3, 5, -1, 2, 7, -4});
  Tensor y = f32_tensor({3, 2}, {0, 0, 0, 0, 0, 0});
  ex.run({x}, &y, 0, OpCategory::Loss);
  const Tensor& out = ex.value(g.output);
  const float* o = out.data<float>();
  for (int r = 0; r < 3; ++r) {
    double x0 = x.data<float>()[2 * r], x1 = x.data<float>()[2 * r + 1];
    EXPECT_NEAR(o[2 * r], (x0 - 1) / std::sqrt(4 + 1e-3), 1e-5) << r;
    EXPECT_NEAR(o[2 * r + 1], 2 * (x1 - 2) / std::sqrt(9 + 1e-3) + 1, 1e-5) << r;
  }
  // The step graph of the same block trains with the batch's statistics: batch_norm there has no
  // inference attribute.
  for (const GraphNode& n : t.step.nodes) {
    if (n.op == ModelOp::BatchNorm) {
      EXPECT_FALSE(n.attrs_as<BatchNormAttrs>().inference);
    }
    if (n.op == ModelOp::Dropout) {
      EXPECT_FALSE(n.attrs_as<DropoutAttrs>().inference);
    }
  }
  // Same parameters by name and offset: the evaluator copies the training buffers as they are.
  ASSERT_EQ(g.params.size(), t.step.params.size());
  for (size_t i = 0; i < g.params.size(); ++i) {
    EXPECT_EQ(g.values[g.params[i]].name, t.step.values[t.step.params[i]].name);
    EXPECT_EQ(g.values[g.params[i]].offset, t.step.values[t.step.params[i]].offset);
  }
}

TEST(TrainValidation, MetricsMeanWhatKerasMeans) {
  // Integer labels: arg-max of the last axis against the label; 2 of 3 right.
  Tensor probs = f32_tensor({3, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f, 0.3f, 0.3f, 0.4f});
  EXPECT_DOUBLE_EQ(metric_sum(MetricKind::Accuracy, LossKind::CrossEntropy, true, probs, i64_tensor({3}, {1, 0, 1})),
                   2.0);
  // One-hot targets: against the target's arg-max.
  Tensor onehot = f32_tensor({3, 3}, {0, 1, 0, 0, 0, 1, 0, 0, 1});
  EXPECT_DOUBLE_EQ(metric_sum(MetricKind::Accuracy, LossKind::CrossEntropy, false, probs, onehot), 2.0);
  // Labels per position (segmentation): per example, the share of its positions right.
  Tensor pixels = f32_tensor({1, 2, 2}, {0.9f, 0.1f, 0.2f, 0.8f});
  EXPECT_DOUBLE_EQ(metric_sum(MetricKind::Accuracy, LossKind::CrossEntropy, true, pixels, i64_tensor({1, 2}, {0, 0})),
                   0.5);
  // binary_cross_entropy: both sides of 0.5, per element.
  Tensor p = f32_tensor({2, 2}, {0.9f, 0.2f, 0.6f, 0.4f});
  Tensor t = f32_tensor({2, 2}, {1, 0, 0, 0});
  EXPECT_DOUBLE_EQ(metric_sum(MetricKind::Accuracy, LossKind::BinaryCrossEntropy, false, p, t), 1.0 + 0.5);
  // mae and mse: the mean over an example's elements, summed over the batch.
  Tensor a = f32_tensor({2, 2}, {1, 2, 3, 4});
  Tensor b = f32_tensor({2, 2}, {0, 0, 3, 6});
  EXPECT_DOUBLE_EQ(metric_sum(MetricKind::Mae, LossKind::Mse, false, a, b), 1.5 + 1.0);
  EXPECT_DOUBLE_EQ(metric_sum(MetricKind::Mse, LossKind::Mse, false, a, b), 2.5 + 2.0);
}

// Every 2 steps and after the last (5): three evaluations on the held-out pipeline, each over all of its
// 40 examples, in the summary and in --stats-json.
TEST(TrainValidation, RunReportsEveryEvaluation) {
  ScratchDir d;
  write_file(d / "v.pipe", R"(pipeline data = range(256)
  | map(r => { x = random_uniform([4], -1.0, 1.0, seed = 1); { x, label: i64(x[0] + x[1] > 0.0) } })
  | batch(32, drop_remainder = true)
pipeline held_out = range(40)
  | map(r => { x = random_uniform([4], -1.0, 1.0, seed = 2); { x, label: i64(x[0] + x[1] > 0.0) } })
  | batch(16)
model net(x: f32[4]) -> f32[2] { x | dense(8) | relu | dense(2) | softmax }
train t = {
  data = data, model = net(x), loss = cross_entropy(label), optimizer = adam(lr = 0.05), steps = 5
  validation = held_out, eval_every = 2, metrics = [accuracy]
}
)");
  auto r = run_pipec({"run", (d / "v.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("validation  loss "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("on 40 examples after step 5 (inference mode; 3 evaluations)"), std::string::npos) << r.err;
  std::string json = read_all(d / "s.json");
  std::smatch m;
  std::regex evals(R"re("step": (\d+),\s*"examples": (\d+),\s*"loss": ([-0-9.e+]+),\s*"accuracy": ([-0-9.e+]+))re");
  std::vector<int> steps;
  for (auto it = std::sregex_iterator(json.begin(), json.end(), evals); it != std::sregex_iterator(); ++it) {
    steps.push_back(std::stoi((*it)[1]));
    EXPECT_EQ((*it)[2], "40");
    double acc = std::stod((*it)[4]);
    EXPECT_GE(acc, 0.0);
    EXPECT_LE(acc, 1.0);
    // 40 examples: accuracy is a whole number of them.
    EXPECT_NEAR(acc * 40, std::round(acc * 40), 1e-9);
  }
  EXPECT_EQ(steps, (std::vector<int>{2, 4, 5})) << json;
}

// `pipec run` evaluates on the fast executor (the reference one with --executor reference): from the
// same weights, a conv net with batch_norm and dropout in inference mode gives the reference's loss and
// accuracy within rounding. (Suite FastExecutor: oneDNN's OpenMP threads keep it out of the TSan job.)
TEST(FastExecutor, EvaluatesAsTheReferenceDoes) {
  CompileRequest request;
  request.path = "eval_test.pipe";
  request.text = R"(pipeline data = range(64)
  | map(r => { x = random_uniform([6, 6, 2], -1.0, 1.0, seed = 1); { x, label: i64(sum(x) > 0.0) } })
  | batch(16, drop_remainder = true)
pipeline held_out = range(40)
  | map(r => { x = random_uniform([6, 6, 2], -1.0, 1.0, seed = 2); { x, label: i64(sum(x) > 0.0) } })
  | batch(16)
model net(x: f32[6, 6, 2]) -> f32[2] {
  x | conv2d(4, 3, padding = same) | batch_norm | relu | flatten | dropout(0.3) | dense(2) | softmax
}
train t = {
  data = data, model = net(x), loss = cross_entropy(label), optimizer = adam(), steps = 2
  validation = held_out, metrics = [accuracy]
}
)";
  request.target = CompileTarget::Train;
  CompileResult r = compile(request);
  ASSERT_TRUE(r.ok()) << r.error;
  const TrainProgram& t = r.trains.at(0).program;
  ASSERT_TRUE(t.eval);
  RunOptions ro;
  ro.seed = 5;
  ro.threads = 1;
  ro.autotune = false;
  const Plan& held_out = r.pipelines.at(1).plan;
  Evaluator ref(t, held_out, ro, std::make_unique<ReferenceExecutor<float>>(t.eval->graph, 5));
  Evaluator fast(t, held_out, ro, std::make_unique<FastExecutor>(t.eval->graph, 5, FastExecutorOptions{1, false}));
  // Weights other than the evaluators' own, with moving statistics away from 0 and 1.
  ReferenceExecutor<float> trained(t.step, 9);
  for (size_t i = 0; i < trained.buffers().states.size(); ++i)
    trained.buffers().states[i] = 0.5f + 0.25f * static_cast<float>(i % 3);
  const EvalResult want = ref.run(trained.buffers(), 2);
  const EvalResult got = fast.run(trained.buffers(), 2);
  EXPECT_EQ(got.examples, 40);
  EXPECT_NEAR(got.loss, want.loss, 1e-5 * std::fabs(want.loss)) << "fast " << got.loss << ", reference " << want.loss;
  ASSERT_EQ(got.metrics.size(), 1u);
  ASSERT_EQ(want.metrics.size(), 1u);
  // An example whose two probabilities are within rounding of each other may go either way.
  EXPECT_NEAR(got.metrics[0].second, want.metrics[0].second, 1.0 / 40 + 1e-9);
}

}  // namespace
}  // namespace pipec

// Data-parallel training (runtime/train/parallel): N replicas on threads, each with its share of every
// batch, against one executor with the whole batch. The random comparison over generated models is
// `train_difftest --replicas 2` (tests/train_difftest); these tests hold the parts it cannot see: the
// replicas stay equal bit for bit, dropout draws the masks one replica would, a short last batch (fewer
// rows than replicas too) weighs its rows, the buckets' all-reduces overlap the backward pass, the
// moving statistics are averaged, a replica's error reaches the step without a hang, and `pipec run`
// with mirrored(devices = 2) trains so.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/compile/compile.h"
#include "runtime/dist/thread_communicator.h"
#include "runtime/train/loop/strategy.h"
#include "runtime/train/parallel/data_parallel_executor.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/sum_batches.h"

namespace pipec {
namespace {

TrainProgram compile_train(const std::string& spec) {
  CompileRequest request;
  request.path = "data_parallel_test.pipe";
  request.text = spec;
  request.target = CompileTarget::Train;
  CompileResult r = compile(request);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.ok() ? std::move(r.trains.at(0).program) : TrainProgram{};
}

std::string mlp_spec(int64_t batch, const std::string& extra_layers = "", const std::string& strategy = "") {
  return fmt::format(
      R"(pipeline data = range(64) | map(r => {{ x = random_uniform([6], seed = 1) {{ x, y: [sum(x)] }} }})
  | batch({})
model net(x: f32[6]) -> f32[1] {{ x | dense(32) | relu{} | dense(16) | tanh | dense(1) }}
train t = {{ data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), steps = 4{} }}
)",
      batch, extra_layers, strategy);
}

// A batch of `rows` with inputs in [-1, 1) and targets their sums, from `seed`.
struct Batch {
  std::vector<Tensor> inputs;
  Tensor target;
};
Batch make_batch(int64_t rows, uint64_t seed) {
  Batch b;
  Tensor x, y;
  testing::sum_batch(rows, seed, x, y);
  b.inputs = {x};
  b.target = y;
  return b;
}

std::unique_ptr<DataParallelExecutor> replicated(const ModelGraph& g, int n, DataParallelOptions o = {}) {
  return std::make_unique<DataParallelExecutor>(
      g, 7, shared_communicators(make_thread_communicators(n)),
      [](const ModelGraph& rg, uint64_t seed) -> std::unique_ptr<StepExecutor> {
        return std::make_unique<ReferenceExecutor<float>>(rg, seed);
      },
      o);
}

double step(StepExecutor& ex, const Batch& b, uint64_t k) {
  const double loss = ex.run(b.inputs, &b.target, k, OpCategory::Loss);
  ex.resume(k, OpCategory::Update);
  return loss;
}

// RMS of a - b relative to the RMS of b - start.
double relative_apart(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& start) {
  double d = 0, moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    moved += (static_cast<double>(b[i]) - start[i]) * (static_cast<double>(b[i]) - start[i]);
  }
  return std::sqrt(d / std::max(moved, 1e-300));
}

// N replicas with the whole batch split between them train as one executor with the whole batch, within
// rounding (each replica's mean, weighted by its rows, is the batch's mean in another order); short
// last batches, one with fewer rows than replicas among them. The replicas' weights stay equal bit for bit.
TEST(DataParallel, ReplicasTrainAsOneExecutorWithTheWholeBatch) {
  const TrainProgram t = compile_train(mlp_spec(12));
  const ModelGraph& g = t.step;
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(fmt::format("{} replicas", n));
    ReferenceExecutor<float> one(g, 7);
    auto many = replicated(g, n);
    const std::vector<float> start = one.buffers().params;
    ASSERT_EQ(many->buffers().params, start) << "replicas start from the same weights";
    const int64_t rows[] = {12, 12, 7, 12, 2, 12};  // 7 and 2 rows: short batches (2 < 3 and 4 replicas)
    for (uint64_t k = 0; k < 6; ++k) {
      const Batch b = make_batch(rows[k], k);
      const double want = step(one, b, k), got = step(*many, b, k);
      EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << "step " << k + 1;
    }
    EXPECT_LT(relative_apart(many->buffers().params, one.buffers().params, start), 1e-4);
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(many->replica(r).buffers().params, many->replica(0).buffers().params) << "replica " << r;
      EXPECT_EQ(many->replica(r).optimizer_slots().m, many->replica(0).optimizer_slots().m) << "replica " << r;
      EXPECT_EQ(many->replica(r).optimizer_slots().iterations, 6) << "replica " << r;
    }
  }
}

// A wrong weighting would show: replicas that averaged their means unweighted on the 7-row batch (4 and
// 3 rows) move the weights by another gradient. The same check as above on that step alone, tighter.
TEST(DataParallel, AShortBatchWeighsEachReplicaByItsRows) {
  const TrainProgram t = compile_train(mlp_spec(12));
  ReferenceExecutor<float> one(t.step, 7);
  auto two = replicated(t.step, 2);
  const Batch b = make_batch(7, 3);
  one.run(b.inputs, &b.target, 0, OpCategory::Loss);
  one.resume(0, OpCategory::Backward);
  two->run(b.inputs, &b.target, 0, OpCategory::Loss);
  two->resume(0, OpCategory::Backward);
  const std::vector<float>& want = one.buffers().grads;
  const std::vector<float>& got = two->buffers().grads;
  double worst = 0, largest = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
    largest = std::max(largest, std::fabs(static_cast<double>(want[i])));
  }
  EXPECT_LT(worst, 1e-5 * largest);
}

// Dropout keys each example's mask by its index in the whole batch: with replicas, example i of replica
// r's share is example (r's start + i), so the loss and the gradients are one executor's. Masks keyed
// by the share's own index would drop other units and differ by far more than rounding.
TEST(DataParallel, DropoutDrawsTheMasksOneReplicaWould) {
  const TrainProgram t = compile_train(mlp_spec(12, " | dropout(0.5)"));
  ReferenceExecutor<float> one(t.step, 7);
  auto two = replicated(t.step, 2);
  for (uint64_t k = 0; k < 3; ++k) {
    const Batch b = make_batch(12, 10 + k);
    const double want = step(one, b, k), got = step(*two, b, k);
    EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << "step " << k + 1;
  }
}

// With buckets of a few parameters, the first bucket's all-reduce is handed to its thread while the
// backward pass is still computing the others; without overlap every bucket is handed over after it.
// When the bucket thread then starts is the scheduler's affair (on two loaded cores it may be after
// the backward pass), so the test reads the hand-over, which the replica's own thread times in order.
TEST(DataParallel, TheFirstBucketIsReducedBeforeTheBackwardPassEnds) {
  const std::string wide =
      R"(pipeline data = range(64) | map(r => { x = random_uniform([6], seed = 1) { x, y: [sum(x)] } })
  | batch(64)
model net(x: f32[6]) -> f32[1] { x | dense(256) | relu | dense(256) | relu | dense(256) | relu | dense(256) | relu | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = 0.01), steps = 2 }
)";
  const TrainProgram t = compile_train(wide);
  DataParallelOptions o;
  o.bucket_bytes = 4096;
  auto two = replicated(t.step, 2, o);
  ASSERT_GE(two->buckets().size(), 4u);
  const Batch b = make_batch(64, 1);
  const auto step_start = std::chrono::steady_clock::now();
  step(*two, b, 0);
  const double step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
  const BucketTimes& times = two->last_bucket_times();
  EXPECT_LT(times.launched.front(), times.backward_end) << "the first bucket was handed over " << times.launched.front()
                                                        << " s into a backward pass of " << times.backward_end << " s";
  for (size_t b = 0; b < times.launched.size(); ++b) {
    EXPECT_GE(times.started[b], times.launched[b]) << "bucket " << b;
    EXPECT_GE(times.ended[b], times.started[b]) << "bucket " << b;
  }
  o.overlap = false;
  auto serial = replicated(t.step, 2, o);
  step(*serial, b, 0);
  EXPECT_GE(serial->last_bucket_times().launched.front(), serial->last_bucket_times().backward_end);
  // Without overlap the step waits for every all-reduce after its backward pass; the summary says so.
  EXPECT_GT(serial->reduce_seconds(), 0);
  EXPECT_GE(serial->exposed_reduce_seconds(), serial->reduce_seconds());
  // With overlap, what the step waited for after its backward pass is part of the step (how much of it
  // depends on when the scheduler ran the bucket thread).
  EXPECT_LE(two->exposed_reduce_seconds(), step_seconds - times.backward_end);
  EXPECT_NE(serial->description().find("s of it after the backward pass"), std::string::npos);
}

// Buckets cover the gradient buffer exactly once, in launch order from its end, each at least the
// asked size but the last, with the node that finishes it.
TEST(DataParallel, BucketsCoverTheGradientsFromTheEnd) {
  const TrainProgram t = compile_train(mlp_spec(12));
  const ModelGraph& g = t.step;
  for (int64_t bytes : {int64_t{4}, int64_t{256}, int64_t{1024}, int64_t{1} << 30}) {
    const std::vector<GradientBucket> b = plan_gradient_buckets(g, bytes);
    ASSERT_FALSE(b.empty());
    EXPECT_EQ(b.front().end, g.param_elements());
    EXPECT_EQ(b.back().begin, 0);
    for (size_t i = 0; i + 1 < b.size(); ++i) {
      EXPECT_EQ(b[i].begin, b[i + 1].end) << "contiguous, from the end";
      EXPECT_GE((b[i].end - b[i].begin) * 4, bytes);
    }
    for (const GradientBucket& k : b) EXPECT_GE(k.last_writer, 0);
  }
  EXPECT_EQ(plan_gradient_buckets(g, int64_t{1} << 30).size(), 1u);
  EXPECT_EQ(plan_gradient_buckets(g, 4).size(), g.params.size());
}

// The bucket size (`--bucket-mb`) changes when each sum runs, not what it is: every element is summed
// over the replicas in rank order whichever bucket holds it, so buckets of one parameter and one bucket
// of everything train the same weights bit for bit, with and without overlap, also on a short batch
// where the replicas' weights differ.
TEST(DataParallel, TheBucketSizeChangesNoBit) {
  const TrainProgram t = compile_train(mlp_spec(12, " | batch_norm"));
  const ModelGraph& g = t.step;
  for (int n : {2, 3}) {
    SCOPED_TRACE(fmt::format("{} replicas", n));
    std::vector<std::unique_ptr<DataParallelExecutor>> runs;
    for (int64_t bytes : {int64_t{4}, int64_t{200}, kDefaultBucketBytes}) {
      DataParallelOptions o;
      o.bucket_bytes = bytes;
      o.overlap = bytes != 200;
      runs.push_back(replicated(g, n, o));
    }
    ASSERT_EQ(runs[0]->buckets().size(), g.params.size());
    ASSERT_GT(runs[1]->buckets().size(), 1u);
    ASSERT_EQ(runs[2]->buckets().size(), 1u);
    const int64_t rows[] = {12, 12, 7, 12};
    for (uint64_t k = 0; k < 4; ++k) {
      const Batch b = make_batch(rows[k], k + 40);
      const double loss = step(*runs[2], b, k);
      for (int i = 0; i < 2; ++i) EXPECT_EQ(step(*runs[static_cast<size_t>(i)], b, k), loss) << "step " << k + 1;
    }
    for (auto& r : runs) r->sync_to_host();
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(runs[static_cast<size_t>(i)]->buffers().params, runs[2]->buffers().params);
      EXPECT_EQ(runs[static_cast<size_t>(i)]->buffers().states, runs[2]->buffers().states);
      EXPECT_EQ(runs[static_cast<size_t>(i)]->optimizer_slots().v, runs[2]->optimizer_slots().v);
    }
  }
}

// batch_norm's moving statistics follow each replica's own rows during the steps; sync_to_host()
// averages them into every replica.
TEST(DataParallel, MovingStatisticsAreAveragedAtSync) {
  const TrainProgram t = compile_train(mlp_spec(12, " | batch_norm"));
  auto two = replicated(t.step, 2);
  step(*two, make_batch(12, 4), 0);
  const std::vector<float> a = two->replica(0).buffers().states, b = two->replica(1).buffers().states;
  ASSERT_FALSE(a.empty());
  ASSERT_NE(a, b) << "each replica's statistics follow its own rows";
  two->sync_to_host();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FLOAT_EQ(two->buffers().states[i], (a[i] + b[i]) * 0.5f) << i;
    EXPECT_EQ(two->replica(1).buffers().states[i], two->buffers().states[i]) << i;
  }
}

// A replica whose executor throws ends the step with its message on the caller's thread; the other
// replica, waiting in a collective, is released rather than left hanging.
class FailingExecutor final : public StepExecutor {
 public:
  FailingExecutor(const ModelGraph& g, uint64_t seed) : inner_(g, seed) {}
  std::string description() const override { return "failing"; }
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds) override {
    return inner_.run(inputs, target, step, last, seconds);
  }
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds) override {
    if (step == 1 && last == OpCategory::Backward) throw std::runtime_error("replica 1's kernel failed");
    return inner_.resume(step, last, seconds);
  }
  FlatBuffers<float>& buffers() override { return inner_.buffers(); }
  OptimizerSlots<float>& optimizer_slots() override { return inner_.optimizer_slots(); }
  LossScale* loss_scale() override { return inner_.loss_scale(); }
  Tensor host_value(int id) override { return inner_.host_value(id); }
  const StepArena& arena() const override { return inner_.arena(); }
  void set_first_example(int64_t first) override { inner_.set_first_example(first); }

 private:
  ReferenceExecutor<float> inner_;
};

TEST(DataParallel, AReplicasErrorEndsTheStepWithItsMessage) {
  const TrainProgram t = compile_train(mlp_spec(12));
  std::atomic<int> made{0};
  CollectiveOptions co;
  co.timeout_seconds = 20;
  DataParallelExecutor two(t.step, 7, shared_communicators(make_thread_communicators(2, co)),
                           [&made](const ModelGraph& g, uint64_t seed) -> std::unique_ptr<StepExecutor> {
                             if (made++ == 1) return std::make_unique<FailingExecutor>(g, seed);
                             return std::make_unique<ReferenceExecutor<float>>(g, seed);
                           });
  step(two, make_batch(12, 1), 0);
  const Batch b = make_batch(12, 2);
  two.run(b.inputs, &b.target, 1, OpCategory::Loss);
  try {
    two.resume(1, OpCategory::Update);
    FAIL() << "the step did not fail";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("replica 1's kernel failed"), std::string::npos) << e.what();
  }
}

// mirrored(devices = n) on a machine without a GPU: n replicas; devices = all: one; a batch that does
// not split (the data's batch size: this one has no drop_remainder, so the step graph does not know
// it) is refused before the first step, naming both numbers and the strategy's place.
TEST(DataParallel, MirroredOnTheCpuChoosesItsReplicas) {
  const TrainProgram two = compile_train(mlp_spec(12, "", ", strategy = mirrored(devices = 2)"));
  EXPECT_EQ(choose_strategy(two, "no GPU").replicas, 2);
  EXPECT_TRUE(choose_strategy(two, "no GPU").error.empty());
  const TrainProgram all = compile_train(mlp_spec(12, "", ", strategy = mirrored()"));
  EXPECT_EQ(choose_strategy(all, "no GPU").replicas, 1);
  const TrainProgram five = compile_train(mlp_spec(12, "", ", strategy = mirrored(devices = 5)"));
  const StrategyChoice c = choose_strategy(five, "no GPU", 12);
  EXPECT_NE(c.error.find("a batch of 12 examples cannot be split evenly over 5 replicas"), std::string::npos)
      << c.error;
  EXPECT_NE(c.error.find("data_parallel_test.pipe:4:108: error:"), std::string::npos) << c.error;
  const TrainProgram ids = compile_train(mlp_spec(12, "", ", strategy = mirrored(devices = [0, 1, 2])"));
  EXPECT_EQ(choose_strategy(ids, "no GPU").replicas, 3);
}

// `pipec run` with mirrored(devices = 2): the summary names the replicas, and the run's losses are a
// single replica's within rounding (a model without batch_norm).
TEST(DataParallel, PipecRunTrainsMirroredReplicasOnTheCpu) {
  testing::ScratchDir dir;
  auto write = [&](const std::string& name, const std::string& strategy) {
    std::ofstream(dir.path() / name) << mlp_spec(16, " | dropout(0.25)", strategy);
    return (dir.path() / name).string();
  };
  const std::string one = write("one.pipe", ""), two = write("two.pipe", ", strategy = mirrored(devices = 2)");
  auto run = [&](const std::string& spec, const std::string& metrics) {
    return testing::run_pipec(
        {"run", spec, "--threads", "2", "--executor", "reference", "--metrics", (dir.path() / metrics).string()});
  };
  const testing::CommandResult a = run(one, "one.jsonl"), b = run(two, "two.jsonl");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.err.find("data-parallel, 2 replicas (2 in-process replicas"), std::string::npos) << b.err;
  auto losses = [&](const std::string& metrics) {
    std::vector<double> out;
    std::ifstream in(dir.path() / metrics);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line).at("loss").get<double>());
    return out;
  };
  const std::vector<double> la = losses("one.jsonl"), lb = losses("two.jsonl");
  ASSERT_EQ(la.size(), 4u);
  ASSERT_EQ(lb.size(), la.size());
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(lb[i], la[i], 1e-5 * std::fabs(la[i])) << "step " << i + 1;
}

}  // namespace
}  // namespace pipec

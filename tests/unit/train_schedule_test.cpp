// Learning-rate schedules and global-norm clipping against values computed by hand from Keras'
// formulas (keras.optimizers.schedules, tf.clip_by_global_norm).
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/train/math/lr_schedule.h"
#include "runtime/train/math/optimizer.h"
#include "tests/unit/train_util.h"

using namespace pipec;
using pipec::testing::compile_train;

namespace {

LrSchedule cosine(double initial, double decay_steps, double alpha = 0) {
  LrSchedule s;
  s.kind = ScheduleKind::CosineDecay;
  s.initial = initial;
  s.decay_steps = decay_steps;
  s.alpha = alpha;
  return s;
}

// Finds the optimizer_step node of a compiled train block.
OptimizerConfig optimizer_of(const TrainProgram& t) {
  for (const GraphNode& n : t.step.nodes)
    if (n.op == ModelOp::OptimizerStep) return OptimizerConfig::from_node(n);
  ADD_FAILURE() << "no optimizer_step";
  return {};
}

const char* kSpec = R"(
source s = tfrecord("data/*.tfrecord") { x: f32[4], y: f32 }
pipeline p = s | batch(8)
model net(x: f32[4]) -> f32[1] { x | dense(1) }
)";

}  // namespace

TEST(TrainSchedule, CosineDecayFollowsHalfACosineAndStaysAtAlpha) {
  LrSchedule s = cosine(0.001, 100);
  EXPECT_DOUBLE_EQ(s.at(0), 0.001);
  EXPECT_NEAR(s.at(50), 0.0005, 1e-15);
  EXPECT_NEAR(s.at(25), 0.001 * 0.5 * (1 + std::sqrt(0.5)), 1e-15);
  EXPECT_NEAR(s.at(100), 0, 1e-15);
  EXPECT_NEAR(s.at(150), 0, 1e-15);  // Keras clamps the step at decay_steps
  LrSchedule a = cosine(0.001, 100, 0.1);
  EXPECT_NEAR(a.at(50), 0.001 * (0.9 * 0.5 + 0.1), 1e-15);
  EXPECT_NEAR(a.at(100), 0.0001, 1e-15);
}

TEST(TrainSchedule, CosineDecayWithWarmupRisesLinearlyThenDecaysFromTheTarget) {
  LrSchedule s = cosine(0.0, 90, 0.1);
  s.has_warmup_target = true;
  s.warmup_target = 0.1;
  s.warmup_steps = 10;
  EXPECT_DOUBLE_EQ(s.at(0), 0.0);
  EXPECT_NEAR(s.at(5), 0.05, 1e-15);
  EXPECT_NEAR(s.at(10), 0.1, 1e-15);
  EXPECT_NEAR(s.at(55), 0.1 * (0.9 * 0.5 + 0.1), 1e-15);
  EXPECT_NEAR(s.at(100), 0.01, 1e-15);
}

TEST(TrainSchedule, LinearWarmupAndExponentialDecay) {
  LrSchedule w;
  w.kind = ScheduleKind::LinearWarmup;
  w.initial = 0;
  w.warmup_target = 0.01;
  w.warmup_steps = 5;
  EXPECT_DOUBLE_EQ(w.at(0), 0.0);
  EXPECT_NEAR(w.at(1), 0.002, 1e-15);
  EXPECT_NEAR(w.at(5), 0.01, 1e-15);
  EXPECT_NEAR(w.at(9), 0.01, 1e-15);
  LrSchedule e;
  e.kind = ScheduleKind::ExponentialDecay;
  e.initial = 0.1;
  e.decay_steps = 10;
  e.decay_rate = 0.5;
  EXPECT_NEAR(e.at(10), 0.05, 1e-15);
  EXPECT_NEAR(e.at(5), 0.1 * std::sqrt(0.5), 1e-15);
}

TEST(TrainSchedule, SgdUsesTheLearningRateOfTheStepCountBeforeTheStep) {
  // linear_warmup(0.5, 2): the first step has lr 0 (Keras calls the schedule with iterations = 0),
  // the second 0.25, the third 0.5.
  OptimizerConfig c;
  c.kind = OptimizerKind::Sgd;
  c.schedule.kind = ScheduleKind::LinearWarmup;
  c.schedule.initial = 0;
  c.schedule.warmup_target = 0.5;
  c.schedule.warmup_steps = 2;
  std::vector<double> w = {1.0, -1.0}, g = {2.0, 4.0};
  OptimizerSlots<double> slots;
  optimizer_step(c, w, g, slots);
  EXPECT_EQ(w, (std::vector<double>{1.0, -1.0}));
  EXPECT_EQ(slots.last_lr, 0.0);
  optimizer_step(c, w, g, slots);
  EXPECT_DOUBLE_EQ(w[0], 1.0 - 0.25 * 2.0);
  EXPECT_DOUBLE_EQ(w[1], -1.0 - 0.25 * 4.0);
  optimizer_step(c, w, g, slots);
  EXPECT_DOUBLE_EQ(w[0], 0.5 - 0.5 * 2.0);
  EXPECT_EQ(slots.last_lr, 0.5);
}

TEST(TrainSchedule, GlobalClipnormScalesEveryGradientByOneFactor) {
  OptimizerConfig c;
  c.kind = OptimizerKind::Sgd;
  c.schedule.initial = 0.1;
  c.global_clipnorm = 1.0;
  std::vector<float> w = {0, 0, 0}, g = {3, 0, 4};  // norm 5: scaled by 1/5
  OptimizerSlots<float> slots;
  optimizer_step(c, w, g, slots);
  EXPECT_FLOAT_EQ(w[0], -0.1f * 3 / 5);
  EXPECT_FLOAT_EQ(w[1], 0.0f);
  EXPECT_FLOAT_EQ(w[2], -0.1f * 4 / 5);
  EXPECT_DOUBLE_EQ(slots.last_grad_norm, 5.0);
  EXPECT_EQ(g, (std::vector<float>{3, 0, 4}));  // the gradients themselves are left alone
  // A norm below the threshold is not scaled.
  c.global_clipnorm = 10.0;
  std::vector<float> w2 = {0, 0, 0};
  OptimizerSlots<float> slots2;
  optimizer_step(c, w2, g, slots2);
  EXPECT_FLOAT_EQ(w2[0], -0.3f);
  EXPECT_FLOAT_EQ(w2[2], -0.4f);
}

TEST(TrainSchedule, AdamWithClippingMovesByTheScheduledRate) {
  // Adam's first step moves every weight by lr_t * m / (sqrt(v) + eps) = lr * g(1 - b1) / ((1 - b1)
  // sqrt((1 - b2) g^2 / (1 - b2)) + ...) ~ lr * sign(g), whatever the clipping scale.
  OptimizerConfig c;
  c.kind = OptimizerKind::Adam;
  c.eps = 0;
  c.schedule = cosine(0.01, 10);
  c.global_clipnorm = 0.5;
  std::vector<double> w = {0, 0}, g = {30, -40};
  OptimizerSlots<double> slots;
  optimizer_step(c, w, g, slots);
  EXPECT_NEAR(w[0], -0.01, 1e-12);
  EXPECT_NEAR(w[1], 0.01, 1e-12);
  // The first moment holds the clipped gradient: (1 - beta1) * g * 0.5 / 50.
  EXPECT_NEAR(slots.m[0], 0.1 * 30 * 0.01, 1e-12);
  EXPECT_NEAR(slots.last_lr, 0.01, 1e-15);
  optimizer_step(c, w, g, slots);
  EXPECT_NEAR(slots.last_lr, 0.01 * 0.5 * (1 + std::cos(M_PI / 10)), 1e-15);
}

TEST(TrainSchedule, TheCompiledStepCarriesTheScheduleAndTheClipnorm) {
  TrainProgram t =
      compile_train(std::string(kSpec) +
                    "train t = { data = p, model = net(x), loss = mse(y), optimizer = sgd(lr = cosine_decay(0.5, 90, "
                    "alpha = 0.1, warmup_target = 1.0, warmup_steps = 10), global_clipnorm = 2.0), steps = 100 }\n");
  OptimizerConfig c = optimizer_of(t);
  EXPECT_EQ(c.kind, OptimizerKind::Sgd);
  EXPECT_EQ(c.global_clipnorm, 2.0);
  EXPECT_EQ(c.schedule.kind, ScheduleKind::CosineDecay);
  EXPECT_TRUE(c.schedule.has_warmup_target);
  EXPECT_NEAR(c.schedule.at(0), 0.5, 1e-15);
  EXPECT_NEAR(c.schedule.at(5), 0.75, 1e-15);
  EXPECT_NEAR(c.schedule.at(100), 0.1, 1e-15);
  TrainProgram r = compile_train(
      std::string(kSpec) +
      "train t = { data = p, model = net(x), loss = mse(y), optimizer = adam(linear_warmup(0.01, 4)) }\n");
  OptimizerConfig w = optimizer_of(r);
  EXPECT_EQ(w.schedule.kind, ScheduleKind::LinearWarmup);
  EXPECT_EQ(w.global_clipnorm, 0.0);
  EXPECT_NEAR(w.schedule.at(2), 0.005, 1e-15);
  // A plain number is the constant schedule.
  TrainProgram k = compile_train(std::string(kSpec) +
                                 "train t = { data = p, model = net(x), loss = mse(y), optimizer = adam(0.02) }\n");
  EXPECT_EQ(optimizer_of(k).schedule.at(1000), 0.02);
}

// The fast executor splits the optimizer's loops over its threads (ReferenceLoops::threads):
// any split, in any order, gives the weights, moments and global norm of one loop bit for bit, for
// every optimizer with weight decay and clipping on (the norm is summed over fixed blocks, so it does
// not depend on the split either).
TEST(TrainSchedule, OptimizerStepIsTheSameBitForBitOnAnySplit) {
  const int64_t n = 3 * kNormBlock + 1234;  // more than one norm block, a ragged last one
  std::vector<float> w0(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    w0[i] = std::sin(0.37 * i) * 0.1f;
    g[i] = std::cos(0.11 * i) * 0.5f;
  }
  // Three uneven parts, the last first.
  ParallelFor reversed_parts = [](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
    const int64_t a = count / 7, b = count / 2;
    body(b, count);
    body(a, b);
    body(0, a);
  };
  for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adam, OptimizerKind::AdamW}) {
    OptimizerConfig c;
    c.kind = kind;
    c.schedule.initial = 0.01;
    c.momentum = 0.9;
    c.weight_decay = 0.004;
    c.global_clipnorm = 5.0;  // the gradients' norm is about 290: every step clips
    std::vector<float> w_one = w0, w_split = w0;
    OptimizerSlots<float> one, split;
    for (int step = 0; step < 3; ++step) {
      optimizer_step(c, w_one, g, one);
      optimizer_step(c, w_split, g, split, reversed_parts);
    }
    SCOPED_TRACE(optimizer_kind_name(kind));
    EXPECT_GT(one.last_grad_norm, c.global_clipnorm);
    EXPECT_EQ(one.last_grad_norm, split.last_grad_norm);
    EXPECT_EQ(w_one, w_split);
    EXPECT_EQ(one.m, split.m);
    EXPECT_EQ(one.v, split.v);
    EXPECT_NE(w_one, w0);
  }
}

// The optimizer's update as one generated loop (compiler/codegen/llvm/emit_optimizer.h, attached by
// attach_step_kernels as `pipec run` does): the same weights and slots bit for bit as the C++ loop the
// reference executor runs, for every optimizer with and without momentum, weight decay and clipping,
// split over parts as the fast executor's threads split it.
TEST(TrainSchedule, CompiledUpdateIsTheLoopBitForBit) {
  for (const char* optimizer : {"sgd(lr = 0.1)", "sgd(lr = 0.05, momentum = 0.9, global_clipnorm = 0.5)",
                                "adam(lr = 1e-3)", "adam(lr = cosine_decay(1e-2, 10), global_clipnorm = 1.0)",
                                "adamw(lr = 2e-3, weight_decay = 0.05, global_clipnorm = 0.3)"}) {
    SCOPED_TRACE(optimizer);
    TrainProgram t = pipec::testing::compile_train_jit(
        std::string(kSpec) + "train t = { data = p, model = net(x), loss = mse(y), optimizer = " + optimizer + " }\n");
    const GraphNode* node = nullptr;
    for (const GraphNode& n : t.step.nodes)
      if (n.op == ModelOp::OptimizerStep) node = &n;
    ASSERT_NE(node, nullptr);
    ASSERT_NE(node->native, nullptr) << "attach_step_kernels compiled no update";
    const OptimizerConfig c = OptimizerConfig::from_node(*node);
    const int64_t n = 10007;  // not a multiple of any vector width
    std::vector<float> w0(n), g(n);
    for (int64_t i = 0; i < n; ++i) {
      w0[i] = std::sin(0.37 * i) * 0.1f;
      g[i] = std::cos(0.11 * i) * (i % 7 == 0 ? 0.0f : 0.5f);
    }
    ParallelFor parts = [](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
      body(count / 3, count);
      body(0, count / 3);
    };
    std::vector<float> w_loop = w0, w_compiled = w0;
    OptimizerSlots<float> loop, compiled;
    for (int step = 0; step < 3; ++step) {
      optimizer_step(c, w_loop, g, loop);
      optimizer_step(c, w_compiled, g, compiled, parts, node->native.get());
    }
    EXPECT_NE(w_loop, w0);
    EXPECT_EQ(w_compiled, w_loop);
    EXPECT_EQ(compiled.m, loop.m);
    EXPECT_EQ(compiled.v, loop.v);
    EXPECT_EQ(compiled.last_lr, loop.last_lr);
  }
}

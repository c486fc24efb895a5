// The liveness plan of a training step (runtime/model/step_memory.h): its figures, and a step too large
// for the machine reported before step 1 with them.
#include <gtest/gtest.h>

#include "runtime/model/step_memory.h"
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

}  // namespace
}  // namespace pipec

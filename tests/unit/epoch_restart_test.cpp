// plan_epoch_restart (runtime/train/loop/epoch_restart.h): what a run of another number of processes
// does with a checkpoint, for each way a run's length is given, and the one it refuses: by epochs, with
// data that repeats inside itself.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "compiler/compile/compile.h"
#include "runtime/train/loop/epoch_restart.h"

namespace pipec {
namespace {

struct Compiled {
  Plan data;
  TrainLength length;
};

// The train block's data plan (optimized, with the repeat its length adds) and length.
Compiled compile_train(const std::string& data, const std::string& length) {
  CompileRequest request;
  request.path = "restart.pipe";
  request.text = "pipeline data = " + data +
                 "\nmodel net(x: f32[2]) -> f32[1] { x | dense(1) }\n"
                 "train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = 0.1), " +
                 length + " }\n";
  request.target = CompileTarget::Train;
  CompileResult r = compile(request);
  EXPECT_TRUE(r.ok()) << r.error;
  if (!r.ok()) return {};
  return {r.pipelines.at(0).plan, r.trains.at(0).length};
}

const char* kData = "range(40) | shuffle(8, seed = 1) | map(r => { x: [f32(r.value), 1.0], y: [0.5] }) | batch(4)";
// The data repeats inside itself: its passes hide the run's epochs.
const char* kRepeatingData =
    "range(40) | repeat(2) | map(r => { x: [f32(r.value), 1.0], y: [0.5] }) | batch(4, drop_remainder = true)";

TrainCheckpointState checkpoint(int64_t writers, int64_t step, int64_t data_pass,
                                std::optional<int64_t> total = std::nullopt) {
  TrainCheckpointState s;
  s.writers = writers;
  s.step = step;
  s.data_pass = data_pass;
  s.total_steps = total;
  return s;
}

TEST(EpochRestart, ByEpochsTheCurrentEpochRestartsAtItsPass) {
  const Compiled c = compile_train(kData, "epochs = 4");
  EXPECT_TRUE(data_passes_visible(c.data));
  const EpochRestart r = plan_epoch_restart(c.data, c.length, checkpoint(2, 25, 2, 40), 3, "d/train.ckpt");
  EXPECT_EQ(r.pass, std::optional<int64_t>(2));
  EXPECT_TRUE(r.epoch);
  EXPECT_FALSE(r.finished);
  EXPECT_EQ(r.note,
            "resumed from d/train.ckpt at step 25, written by 2 ranks; this run has 3 ranks: the weights and the "
            "optimizer continue, epoch 3 of 4 restarts from its first example (positions in 2 ranks' shards of the "
            "data have no place in 3 ranks' shards)");
  // One epoch: the data from its beginning (no repeat was added to start at).
  const Compiled once = compile_train(kData, "epochs = 1");
  const EpochRestart r1 = plan_epoch_restart(once.data, once.length, checkpoint(1, 4, 0), 2, "d/train.ckpt");
  EXPECT_EQ(r1.pass, std::nullopt);
  EXPECT_TRUE(r1.epoch);
  EXPECT_NE(r1.note.find(
                "written by one process; this run has 2 ranks: the weights and the optimizer continue, "
                "epoch 1 of 1 restarts from its first example (a position in the whole data has no place in 2 ranks' "
                "shards)"),
            std::string::npos)
      << r1.note;
}

TEST(EpochRestart, ByStepsTheDataRestartsAtItsPassAndTheRunEndsWhereItWould) {
  for (const char* length : {"steps = 100", "steps = 10, epochs = 10"}) {
    const Compiled c = compile_train(kData, length);
    const EpochRestart r = plan_epoch_restart(c.data, c.length, checkpoint(3, 37, 3), 1, "d/train.ckpt");
    EXPECT_EQ(r.pass, std::optional<int64_t>(3)) << length;
    EXPECT_FALSE(r.epoch);
    EXPECT_EQ(r.note,
              "resumed from d/train.ckpt at step 37, written by 3 ranks; this run has one process: the weights and "
              "the optimizer continue, the data restarts from the first example of its pass 4, and the run still "
              "ends at step 100 (positions in 3 ranks' shards of the data have no place in the whole data)")
        << length;
  }
  // Passes hidden by a repeat inside the data: from its beginning.
  const Compiled c = compile_train(kRepeatingData, "steps = 30");
  EXPECT_FALSE(data_passes_visible(c.data));
  const EpochRestart r = plan_epoch_restart(c.data, c.length, checkpoint(2, 12, 1), 3, "d/train.ckpt");
  EXPECT_EQ(r.pass, std::nullopt);
  EXPECT_NE(r.note.find("the data restarts from its first example, and the run still ends at step 30"),
            std::string::npos)
      << r.note;
}

TEST(EpochRestart, ARunThatHadEndedHasNothingLeft) {
  const Compiled steps = compile_train(kData, "steps = 30");
  EXPECT_TRUE(plan_epoch_restart(steps.data, steps.length, checkpoint(2, 30, 2), 3, "d").finished);
  const Compiled epochs = compile_train(kData, "epochs = 3");
  const EpochRestart r = plan_epoch_restart(epochs.data, epochs.length, checkpoint(2, 30, 2, 30), 3, "d/train.ckpt");
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.note,
            "resumed from d/train.ckpt at step 30, written by 2 ranks; this run has 3 ranks: the run had ended "
            "there, so nothing is left to train");
  EXPECT_FALSE(plan_epoch_restart(epochs.data, epochs.length, checkpoint(2, 29, 2, 30), 3, "d").finished);
}

TEST(EpochRestart, ByEpochsOfDataThatRepeatsInsideItselfIsRefused) {
  const Compiled c = compile_train(kRepeatingData, "epochs = 3");
  try {
    plan_epoch_restart(c.data, c.length, checkpoint(2, 12, 1), 3, "d/train.ckpt");
    ADD_FAILURE() << "restarted an epoch it cannot find";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              "d/train.ckpt: the checkpoint was written by 2 ranks (mpirun -np 2) and this run has 3 ranks (mpirun "
              "-np 3): each rank's input position is a position in its own shard of the data, and the epoch cannot "
              "be restarted instead: the run counts 3 epochs, but the data repeats inside itself, which hides "
              "where an epoch begins; resume with the same number of ranks");
  }
  // Unless its run had ended: nothing is left to restart.
  EXPECT_TRUE(plan_epoch_restart(c.data, c.length, checkpoint(2, 36, 1, 36), 3, "d").finished);
}

}  // namespace
}  // namespace pipec

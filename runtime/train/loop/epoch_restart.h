// Resuming a training checkpoint written by another number of processes: a multi_worker job of M
// ranks resumed by N != M ranks, or by one process, or one process's checkpoint resumed by N ranks.
//
// The weights, the optimizer's slots, the loss scale and the counts are the same on every process and
// carry over whole. The input positions do not: each is a place in its rank's shard of the data, and N
// ranks shard the data otherwise, so no position fits. The run instead restarts the current epoch from
// its first example, each rank reading its new shard, and goes on from the checkpoint's step:
//
// - By epochs alone (`epochs = E`): the current epoch is the pass over the data of the last step trained
//   (its end, its evaluation and its epoch line had not come yet). It is read again from its first
//   example, so the examples of it trained before the checkpoint are trained twice, and the run ends
//   with epoch E as it would have: the run counts passes, so it trains more steps in all than one left
//   alone (a pass of N ranks has about as many steps as one of M: the global batch is the same).
// - By steps (`steps = S`, with or without `epochs`, which are then S-step spans of an endless stream):
//   the run ends at step S as it would have. The data restarts from the first example of the pass it
//   was in (the pass of the data's outermost repeat: its shuffles and random ops draw as that pass's
//   would), or from its first example when its passes cannot be told (several repeats, or none).
//
// Either way the step count goes on from the checkpoint's, so the learning rate's schedule, dropout's
// keys and the checkpoint cadence continue. A run by epochs alone whose data repeats inside itself
// cannot find where its epochs begin; resuming it with another number of processes is refused, as it was
// before restarting existed, unless its run had ended (nothing is left to train).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/plan/plan.h"
#include "runtime/train/loop/train_length.h"
#include "runtime/train/persist/train_checkpoint.h"

namespace pipec {

struct EpochRestart {
  int64_t writers = 1;    // the processes that wrote the checkpoint
  int64_t processes = 1;  // this run's
  int64_t step = 0;       // the checkpoint's step, which the run goes on from
  /// The pass of the data's outermost repeat the input pipelines start at (0-based); nullopt: the data
  /// starts from its beginning.
  std::optional<int64_t> pass;
  /// The run counts epochs and `pass` (or the data's beginning, with one epoch) is the current one's start.
  bool epoch = false;
  bool finished = false;  // the checkpoint's run had ended: nothing is left to train
  std::string note;       // the sentence rank 0 prints and --stats-json keeps
};

/// Whether the chunks' epoch numbers `data`'s passes: its only repeat is its outermost
/// (outermost_repeat, runtime/exec/pipeline_run.h).
bool data_passes_visible(const Plan& data);

/// How a run of `processes` over `data` (trained for `length`) takes the checkpoint `cs` of
/// `cs.writers` processes (another number), read from `checkpoint_file`. Throws CheckpointError naming
/// the file and both numbers when the run counts epochs its data hides.
EpochRestart plan_epoch_restart(const Plan& data, const TrainLength& length, const TrainCheckpointState& cs,
                                int processes, const std::string& checkpoint_file);

}  // namespace pipec

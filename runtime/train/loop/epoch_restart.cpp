#include "runtime/train/loop/epoch_restart.h"

#include <fmt/format.h>

#include "runtime/exec/pipeline_run.h"

namespace pipec {

namespace {

// "2 ranks" or "one process".
std::string count_text(int64_t n) { return n == 1 ? std::string("one process") : fmt::format("{} ranks", n); }

// Why no position carries over, in the note's parentheses.
std::string why_no_position(int64_t writers, int64_t processes) {
  const std::string to = processes == 1 ? std::string("the whole data") : fmt::format("{} ranks' shards", processes);
  if (writers == 1) return "a position in the whole data has no place in " + to;
  return fmt::format("positions in {} ranks' shards of the data have no place in {}", writers, to);
}

}  // namespace

bool data_passes_visible(const Plan& data) {
  int repeats = 0;
  for (const Stage& s : data.stages) repeats += s.kind == StageKind::Repeat || s.kind == StageKind::ShuffleRepeat;
  return repeats == 1 && outermost_repeat(data) >= 0;
}

EpochRestart plan_epoch_restart(const Plan& data, const TrainLength& length, const TrainCheckpointState& cs,
                                int processes, const std::string& checkpoint_file) {
  EpochRestart r;
  r.writers = cs.writers;
  r.processes = processes;
  r.step = cs.step;
  const bool by_epochs = length.epochs && !length.steps;
  const bool visible = data_passes_visible(data);
  const std::string head = fmt::format("resumed from {} at step {}, written by {}; this run has {}", checkpoint_file,
                                       cs.step, count_text(cs.writers), count_text(processes));
  if (length.steps ? cs.step >= *length.steps : cs.total_steps && cs.step >= *cs.total_steps) {
    r.finished = true;
    r.note = head + ": the run had ended there, so nothing is left to train";
    return r;
  }
  // After the end's check: a run that had ended needs no epoch to restart.
  if (by_epochs && *length.epochs > 1 && !visible)
    throw CheckpointError(fmt::format(
        "{}: the checkpoint was written by {} and this run has {}: each rank's input position is a position in its "
        "own shard of the data, and the epoch cannot be restarted instead: the run counts {} epochs, but the data "
        "repeats inside itself, which hides where an epoch begins; resume with the same number of ranks",
        checkpoint_file, process_count_text(cs.writers), process_count_text(processes), *length.epochs));
  std::string what;
  if (by_epochs) {
    r.epoch = true;
    // One epoch: the whole data, from its beginning (a run of one epoch adds no repeat to find).
    if (*length.epochs > 1) r.pass = cs.data_pass;
    what = fmt::format("epoch {} of {} restarts from its first example", r.pass.value_or(0) + 1, *length.epochs);
  } else {
    if (visible) r.pass = cs.data_pass;
    what = r.pass ? fmt::format("the data restarts from the first example of its pass {}", *r.pass + 1)
                  : std::string("the data restarts from its first example");
    what += fmt::format(", and the run still ends at step {}", *length.steps);
  }
  r.note = fmt::format("{}: the weights and the optimizer continue, {} ({})", head, what,
                       why_no_position(cs.writers, processes));
  return r;
}

}  // namespace pipec

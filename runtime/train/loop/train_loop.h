// The training loop: batches from the data pipeline into the step graph on a StepExecutor (the
// reference one unless the caller makes another), for a fixed number of steps or epochs, with progress,
// timing, NaN checks and weights in and out. The data flows one way: the run is restored (the
// executor's initial weights, --init's, or a checkpoint's state), then each step takes its batch, runs,
// is checked, and may be followed by a checkpoint and an evaluation; the end saves.
//
// A run whose length counts epochs (runtime/train/loop/train_length.h) also ends each epoch as Keras'
// fit() does: an evaluation on the validation data, when the block has one, and an EpochEnd with the
// epoch's mean loss for the caller's epoch line.
//
// The executor may keep its state on a device: the loop calls sync_to_device() after it wrote weights
// or a checkpoint's state into the executor's host copies, and sync_to_host() before it reads them (a
// checkpoint, an evaluation, --save).
//
// How long it runs: runtime/train/loop/train_length.h (compile() appends the repeat the length needs to the
// data plan).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/dist/communicator.h"
#include "runtime/exec/autotune_model.h"
#include "runtime/model/train_program.h"
#include "runtime/plan/plan.h"
#include "runtime/threads/cancellation.h"
#include "runtime/train/loop/epoch_restart.h"
#include "runtime/train/loop/evaluate.h"
#include "runtime/train/loop/train_length.h"
#include "runtime/train/loop/train_memory_plan.h"
#include "runtime/train/persist/weights_file.h"
#include "runtime/train/step_executor.h"

namespace pipec {

class PipelineRun;
struct TrainProgress;
struct EpochEnd;

/// A training run stopped on bad data or a loss that is not finite; the message names the step.
class TrainError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainOptions {
  uint64_t seed = 0;
  int threads = 0;
  std::string spec_dir;
  const CancellationToken* cancel = nullptr;
  TrainLength length;
  std::string init_path;  // start from these weights (safetensors); not with `resume`
  std::string save_path;  // write the weights here at the end
  /// A training checkpoint folder (runtime/train/persist/train_checkpoint.h): saved every `checkpoint_every`
  /// steps (counted from step 0, so a resumed run keeps the cadence; 0: only at the end) and after the
  /// last step; `resume` starts from it instead of from the initial weights. A checkpoint written by
  /// another number of processes restarts the current epoch (runtime/train/loop/epoch_restart.h).
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  /// Called once, before the first step, when the resumed checkpoint was written by another number of
  /// processes and the run restarts its epoch: the driver prints the note.
  std::function<void(const EpochRestart&)> on_epoch_restart;
  const Plan* validation = nullptr;  // the validation pipeline's plan, when the block has `validation`
  /// The data pipeline's run options (runtime/exec/pipeline_run.h): its memory budget (0: half of
  /// RAM), whether its `auto` parameters and the thread split (runtime/train/loop/thread_split.h) are tuned,
  /// and `auto` values fixed instead.
  uint64_t memory_budget = 0;
  bool autotune = true;
  std::vector<std::pair<KnobKind, int64_t>> auto_values;
  /// Called once with the data pipeline's run and the progress after the last step, before the run
  /// goes away: the driver reads its statistics and autotuner for the summary.
  std::function<void(const PipelineRun&, const TrainProgress&)> inspect_pipeline;
  /// Makes the executor of the step (parameters initialized from the seed); empty: the reference
  /// executor. The driver passes the fast one (runtime/train/fast), which the runtime does not link.
  std::function<std::unique_ptr<StepExecutor>(const ModelGraph&, uint64_t seed)> make_executor;
  /// Makes the executor of the evaluation graph (TrainProgram::eval), which runs between steps; null:
  /// the reference executor. The driver passes the fast executor unless --executor reference.
  std::function<std::unique_ptr<StepExecutor>(const ModelGraph&, uint64_t seed)> make_eval_executor;
  /// Called after each evaluation on the validation data, with its result.
  std::function<void(const EvalResult&)> on_evaluation;
  /// Called when an epoch ends, on a run whose length counts epochs, after its evaluation.
  std::function<void(const EpochEnd&)> on_epoch_end;
  /// Data-parallel training across processes (multi_worker): called once before each step with whether
  /// this process has a batch for it, and true only when every process has one. False ends the data
  /// for every process alike, so that shards of uneven length end the run instead of leaving the longer
  /// ones waiting for the others. Empty: this process's data alone decides.
  std::function<bool(bool have_batch)> all_have_batch;
  /// The examples a step trained, given this process's rows of it (multi_worker: every rank's rows).
  /// Empty: this process's rows.
  std::function<int64_t(int64_t rows)> step_examples;
  /// multi_worker: the processes of the run, one rank each (null: this process alone). Every rank
  /// takes part in a checkpoint, rank 0 alone writes it: it gathers every rank's input position (each
  /// reads its own shard) and saves them with the weights, which are the same everywhere; a resume has
  /// rank 0 read the checkpoint and send each rank its position back, and the executor's
  /// sync_to_device() hands every rank rank 0's weights. --save is likewise rank 0's to write, after a
  /// sync every rank takes part in. A checkpoint of another number of ranks gives each its counts and
  /// no position: all restart the epoch, each on its own shard.
  std::shared_ptr<Communicator> ranks;
};

/// The end of one epoch (a pass over the data, or `steps` steps with both steps and epochs): on a run by
/// `steps` per epoch, at each multiple of them; by epochs alone, where a pass over the data ends. A
/// pipeline that also repeats inside itself hides where its passes end: such a run of several epochs
/// has no EpochEnd (one of one epoch has its one).
struct EpochEnd {
  int64_t epoch = 0;               // 1, 2, ...
  int64_t epochs = 0;              // the run's epochs
  int64_t steps = 0;               // steps of the epoch this run took (fewer in the first after a resume)
  int64_t step = 0;                // steps done when it ended
  double loss = 0;                 // the mean of its steps' losses (Keras' epoch loss), NaN if none was finite
  double lr = 0;                   // the learning rate of its last step
  double seconds = 0;              // from its first step to its end, the evaluation included
  std::optional<EvalResult> eval;  // the evaluation at its end, when the block has validation
};

struct TrainProgress {
  int64_t step = 0;                    // steps done (a resumed run counts from its checkpoint's)
  int64_t resumed_from = 0;            // the checkpoint's step count when the run resumed, else 0
  std::optional<int64_t> total_steps;  // known up front with steps; with epochs alone, after the first pass
  int64_t epoch = 0;                   // the data pass of the last batch
  double loss = 0;                     // of the last step
  double smoothed_loss = 0;            // exponential moving average (weight 0.05 per step), bias-corrected
  double lr = 0;                       // the learning rate of the last step (its schedule's value)
  int64_t examples = 0;                // examples this run trained on (since it resumed)
  double elapsed = 0;                  // seconds of this run
  double input_wait = 0;               // seconds blocked waiting for the next batch
  std::optional<EvalResult> eval;      // the last evaluation on the validation data
  std::optional<double> loss_scale;    // mixed_fp16: the dynamic loss scale after the last step
  int64_t skipped_steps = 0;           // mixed_fp16: steps skipped on an infinite or NaN gradient
};

struct TrainSummary {
  TrainProgress last;
  PhaseSeconds phases{};  // forward, loss, backward, update
  double first_loss = 0;
  std::vector<double> losses;  // every step's loss (this run's steps)
  int64_t saved_tensors = 0;
  double saved_bytes = 0;
  int64_t checkpoints = 0;        // checkpoints saved
  std::vector<EvalResult> evals;  // every evaluation: each `eval_every` steps, each epoch's end, after the last step
  std::vector<EpochEnd> epochs;   // every epoch that ended, on a run that counts epochs
  std::string executor;           // the executor's description
  int threads = 1;                // the data pipeline's pool workers
  int compute_threads = 0;        // of them, given to the compute at the end (runtime/train/loop/thread_split.h)
  int thread_split_changes = 0;
  std::string thread_split;  // what the split is and why, in a sentence
  /// multi_worker: the examples of this process's shard left untrained because another process's shard
  /// ended first (each example is trained at most once per pass; these wait for the next).
  int64_t left_by_others = 0;
  /// The memory plan the run was checked against before step 1, and the most the process held
  /// resident at once by the end (its VmHWM; -1 where the system cannot tell).
  TrainMemoryPlan memory;
  int64_t peak_resident_bytes = -1;
  /// The resumed checkpoint was written by another number of processes: how the run went on from it.
  std::optional<EpochRestart> epoch_restart;
};

/// Trains `t` on the batches of `data` (the optimized plan of its data pipeline). Calls `progress` after
/// every step. Throws TrainError (bad data, non-finite loss), WeightsFileError, CheckpointError (a
/// checkpoint that cannot be written, or refused on resume), KernelError and CancelledError.
TrainSummary run_training(const TrainProgram& t, const Plan& data, const TrainOptions& options,
                          const std::function<void(const TrainProgress&)>& progress = {});

}  // namespace pipec

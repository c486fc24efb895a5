// The TensorBoard event files of a training run (`pipec run --logdir DIR`), with Keras' tag names where
// Keras has them (its TensorBoard callback: `batch_*` per step, `epoch_*` per epoch, evaluations as
// `evaluation_*_vs_iterations`):
//
//   DIR/train/       each step, at step = steps done (1, 2, ...):
//                      batch_loss, batch_learning_rate (the schedule's rate of the step),
//                      batch_loss_scale (mixed_fp16 only), batch_examples_per_second and
//                      batch_input_wait_share (examples / seconds and input wait / seconds since the run
//                      started: --metrics' figures)
//                    each epoch, at step = the epoch's index (0, 1, ...):
//                      epoch_loss (the mean of its steps' losses), epoch_learning_rate (its last step's)
//   DIR/validation/  each evaluation, at step = training steps done:
//                      evaluation_loss_vs_iterations, evaluation_<metric>_vs_iterations
//                    each epoch's evaluation, at step = the epoch's index:
//                      epoch_loss, epoch_<metric>
//
// The files are written as runtime/io/event_file_writer.h says: a running TensorBoard follows them, and
// a run killed even with SIGKILL leaves whole records of every step up to about its last seconds.
#pragma once

#include <memory>
#include <string>

#include "runtime/io/event_file_writer.h"
#include "runtime/train/loop/evaluate.h"
#include "runtime/train/loop/train_loop.h"

namespace pipec {

class TrainEventLog {
 public:
  /// Makes DIR/train and its event file (DIR/validation at the first evaluation). Throws DataError.
  explicit TrainEventLog(const std::string& logdir, double flush_seconds = EventFileWriter::kDefaultFlushSeconds);

  /// Each throws DataError when an event file cannot be written.
  void step(const TrainProgress& p);
  void evaluation(const EvalResult& e);
  void epoch(const EpochEnd& e);
  /// Writes what is left and closes the files. Throws DataError.
  void close();

  const EventFileWriter& train_file() const { return train_; }

 private:
  EventFileWriter& validation();

  std::string logdir_;
  double flush_seconds_;
  EventFileWriter train_;
  std::unique_ptr<EventFileWriter> validation_;
};

}  // namespace pipec

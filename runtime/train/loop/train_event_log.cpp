#include "runtime/train/loop/train_event_log.h"

#include <vector>

namespace pipec {

namespace {

float f32(double v) { return static_cast<float>(v); }

}  // namespace

TrainEventLog::TrainEventLog(const std::string& logdir, double flush_seconds)
    : logdir_(logdir), flush_seconds_(flush_seconds), train_(logdir + "/train", flush_seconds) {}

EventFileWriter& TrainEventLog::validation() {
  if (!validation_) validation_ = std::make_unique<EventFileWriter>(logdir_ + "/validation", flush_seconds_);
  return *validation_;
}

void TrainEventLog::step(const TrainProgress& p) {
  std::vector<tfevent::Scalar> s;
  s.push_back({"batch_loss", f32(p.loss)});
  s.push_back({"batch_learning_rate", f32(p.lr)});
  if (p.loss_scale) s.push_back({"batch_loss_scale", f32(*p.loss_scale)});
  // The same quotients as --metrics' examples_per_second and input_wait_seconds / seconds.
  s.push_back({"batch_examples_per_second", f32(p.elapsed > 0 ? static_cast<double>(p.examples) / p.elapsed : 0.0)});
  s.push_back({"batch_input_wait_share", f32(p.elapsed > 0 ? p.input_wait / p.elapsed : 0.0)});
  train_.add_scalars(p.step, s);
}

void TrainEventLog::evaluation(const EvalResult& e) {
  std::vector<tfevent::Scalar> s;
  s.push_back({"evaluation_loss_vs_iterations", f32(e.loss)});
  for (const auto& [name, value] : e.metrics) s.push_back({"evaluation_" + name + "_vs_iterations", f32(value)});
  validation().add_scalars(e.step, s);
}

void TrainEventLog::epoch(const EpochEnd& e) {
  // Keras numbers epochs from 0 on TensorBoard's axis.
  const int64_t at = e.epoch - 1;
  train_.add_scalars(at, {{"epoch_loss", f32(e.loss)}, {"epoch_learning_rate", f32(e.lr)}});
  if (!e.eval) return;
  std::vector<tfevent::Scalar> s;
  s.push_back({"epoch_loss", f32(e.eval->loss)});
  for (const auto& [name, value] : e.eval->metrics) s.push_back({"epoch_" + name, f32(value)});
  validation().add_scalars(at, s);
}

void TrainEventLog::close() {
  train_.close();
  if (validation_) validation_->close();
}

}  // namespace pipec

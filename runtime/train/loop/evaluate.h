// Evaluation on the `validation` pipeline: the model in inference mode (batch_norm with its moving
// statistics, dropout off) over every batch of the validation data, with the training weights of the
// moment; the loss and each metric averaged over the examples, as Keras' evaluate() reports them.
// It runs on an executor of its own (the inference graph's), made by the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/exec/pipeline_run.h"
#include "runtime/model/train_program.h"
#include "runtime/plan/plan.h"
#include "runtime/train/step_executor.h"

namespace pipec {

struct EvalResult {
  int64_t step = 0;                                     // training steps done when it ran
  int64_t examples = 0;                                 // validation examples seen
  double loss = 0;                                      // mean over the examples
  std::vector<std::pair<std::string, double>> metrics;  // in the order the block lists them
};

/// Keras' metrics over one batch: the sum over its examples (the caller divides by the examples).
/// accuracy: with integer labels (cross_entropy) the arg-max of the last axis against the label; with
/// one-hot targets against the target's arg-max; for binary_cross_entropy output and target each
/// thresholded at 0.5, per element. mae, mse: per element. Per example, the mean over its positions.
double metric_sum(MetricKind metric, LossKind loss, bool class_labels, const Tensor& output, const Tensor& target);

class Evaluator {
 public:
  /// `validation` is the optimized plan of the validation pipeline; `t.eval` must be set, and `executor`
  /// runs its graph (t.eval->graph).
  Evaluator(const TrainProgram& t, const Plan& validation, const RunOptions& options,
            std::unique_ptr<StepExecutor> executor);

  /// One pass over the validation data with these weights (parameters and moving statistics), which
  /// are the host copies of the training executor's buffers (current after its sync_to_host()).
  EvalResult run(const FlatBuffers<float>& weights, int64_t step);

 private:
  const TrainProgram& t_;
  const Plan& plan_;
  RunOptions options_;
  std::unique_ptr<StepExecutor> ex_;
};

}  // namespace pipec

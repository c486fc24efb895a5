// A compiled train block: the training-step graph plus what the training loop needs around it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

/// The `validation` entry: the model in inference mode (batch_norm with its moving statistics, dropout
/// off) followed by the loss, run on the validation pipeline every `every` steps and after the last.
struct EvalProgram {
  std::string pipeline;             // the pipeline named by `validation` (empty when written inline)
  int64_t every = 0;                // `eval_every`; 0: only after the last step
  std::vector<MetricKind> metrics;  // in the order written
  ModelGraph graph;                 // inputs, output, target and loss as in the step graph; no backward
};

/// `mirrored(devices = ...)`: every device (the default), a count, or a list of GPU ids.
struct MirroredDevices {
  enum class Kind { All, Count, Ids };
  Kind kind = Kind::All;
  int64_t count = 0;         // Kind::Count
  std::vector<int64_t> ids;  // Kind::Ids
};

struct TrainProgram {
  std::string name;  // the train block's name
  SpecLoc loc;
  std::string data_pipeline;      // the pipeline named by `data` (empty when written inline)
  ModelGraph step;                // forward, loss, backward and update nodes
  std::optional<int64_t> steps;   // the block's `steps`
  std::optional<int64_t> epochs;  // the block's `epochs`
  Precision precision = Precision::Fp32;
  StrategyKind strategy = StrategyKind::Single;
  SpecLoc strategy_loc;             // where the strategy entry is written (invalid when absent)
  MirroredDevices devices;          // mirrored's `devices`
  std::string loss_text;            // "mse(score)", for messages
  std::string optimizer_text;       // "adam(lr = 0.001, ...)", with every setting
  std::optional<EvalProgram> eval;  // the block's `validation`
  /// The model alone in inference mode (batch_norm on its moving statistics, dropout off), with the
  /// block's precision and no loss: its output is the model's prediction. What a model library built
  /// by `pipec build --train` runs.
  ModelGraph inference;
};

/// `pipec explain`'s text of a train block: its settings, then the step graph.
std::string print_train_program(const TrainProgram& t);

}  // namespace pipec

// A compiled train block: the training-step graph plus what the training loop needs around it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/model/model_graph.h"

namespace pipec {

struct TrainProgram {
  std::string name;            // the train block's name
  SpecLoc loc;
  std::string data_pipeline;   // the pipeline named by `data` (empty when written inline)
  ModelGraph step;             // forward, loss, backward and update nodes
  std::optional<int64_t> steps;   // the block's `steps`
  std::optional<int64_t> epochs;  // the block's `epochs`
  std::string precision = "fp32";
  std::string strategy = "single";
  std::string loss_text;       // "mse(score)", for messages
  std::string optimizer_text;  // "adam(lr = 0.001, ...)", with every setting
};

/// `pipec explain`'s text of a train block: its settings, then the step graph.
std::string print_train_program(const TrainProgram& t);

}  // namespace pipec

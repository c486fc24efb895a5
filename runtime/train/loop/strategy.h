// How a train block's `strategy` runs on this machine. Only one replica trains for now: `single()` as
// written; `mirrored(...)` and `multi_worker()` fall back to one replica, with one warning naming why
// (no GPU on this machine, or data-parallel training not being implemented yet), as a map after
// to(gpu) falls back to the CPU with a warning.
#pragma once

#include <string>

#include "runtime/model/train_program.h"

namespace pipec {

struct StrategyChoice {
  int replicas = 1;
  std::string device = "cpu";
  std::string warning;  // empty when the strategy runs as written
};

/// `no_gpu_why` is empty when a GPU is usable, else the sentence saying why not ("the CUDA driver
/// found no GPU").
StrategyChoice choose_strategy(const TrainProgram& t, const std::string& no_gpu_why);

}  // namespace pipec

// The memory a training run will hold, planned part by part before its first step, and the resident
// memory the process reached, to hold the plan against (`pipec run`'s summary and --stats-json). The
// training loop checks the plan against the memory the machine has before step 1.
//
// The parts, each what the run really holds rather than a rule of thumb:
//  - the process: what was resident when the run began (the program and its libraries, the compiled
//    spec and its JIT code), measured;
//  - weights and optimizer: parameters, their gradients, state and the optimizer's slots;
//  - activations and gradients: the block the executor places a step's computed values in, planned
//    with the executor's own lifetimes;
//  - the kernels: what the executor's kernels hold beside it, by part, as the executor reports it
//    (the fast one asks oneDNN: its scratchpad, activations staged in a primitive's layout, reordered
//    weights, a Winograd layer's own copy of its input, pooling workspaces);
//  - the batch: the chunk the loop holds while a step reads it, and copies of inputs whose dtype the
//    graph converts;
//  - the input pipeline: its buffers once the step, the slower side, has let them fill, at their
//    starting sizes (runtime/exec/footprint.h's steady_holdings);
//  - evaluation: the inference graph's executor (its flat buffers and block) and one validation batch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/train_program.h"
#include "runtime/plan/plan.h"
#include "runtime/train/step_executor.h"

namespace pipec {

class PipelineRun;

struct TrainMemoryPlan {
  int64_t rows = 0;            // the batch size planned for
  int64_t process = 0;         // resident when the run began
  int64_t flat = 0;            // parameters, gradients, state, optimizer slots
  int64_t values = 0;          // activations and gradients: the executor's block
  int64_t batch = 0;           // the chunk the loop holds and the inputs' converted copies
  int64_t input_pipeline = 0;  // the data pipeline's buffers, full, at their starting sizes
  int64_t evaluation = 0;      // the validation graph's executor and batch (0 without validation)
  /// The kernels' own memory by part; empty when the executor cannot tell (then counted as nothing).
  std::vector<std::pair<std::string, int64_t>> kernels;
  /// Pipeline buffers whose size only the run learns ("#3 map"): counted as nothing.
  std::vector<std::string> unknown;

  int64_t kernel_bytes() const;
  int64_t total() const;
  /// "1.23 GB for steps of 16: process 80.1 MB, weights and optimizer 125.6 MB, activations and gradients
  /// 381.8 MB, kernels 20.3 MB (oneDNN scratchpad 8.1 MB, ...), batch 1.6 MB, input pipeline 9.4 MB".
  std::string text() const;
};

/// The plan of `t`'s steps on `executor` (readied now for the step's batch size: its kernels are made),
/// with batches from `data`, given the process's resident bytes when the run began.
TrainMemoryPlan plan_train_memory(const TrainProgram& t, StepExecutor& executor, const PipelineRun& data,
                                  const Plan* validation, int64_t process_bytes);

/// Bytes resident now (VmRSS), and the most resident at once so far (VmHWM); -1 where /proc/self/status
/// cannot tell.
int64_t resident_bytes();
int64_t peak_resident_bytes();

}  // namespace pipec

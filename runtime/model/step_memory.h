// The memory a training step holds: its activations and gradients planned by liveness (each value lives
// from the node that computes it to the last node that reads it, as the executors allocate and free
// them), and the flat buffers beside them (parameters, gradients, state, the optimizer's slots).
// `pipec explain` prints it; the training loop checks it against the machine's memory before step 1.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/model/model_graph.h"

namespace pipec {

struct StepMemory {
  int64_t peak_activation_bytes = 0;  // the most bytes of batched and intermediate values live at once
  int peak_node = -1;                 // the node during which the peak is reached
  int64_t input_bytes = 0;            // the batch fed in (inputs and target), held for the whole step
  int64_t arena_bytes = 0;            // the block the computed values live in (step_arena.h), >= peak - inputs
  int64_t flat_bytes = 0;             // parameters + their gradients + state + optimizer slots

  int64_t total_bytes() const { return input_bytes + arena_bytes + flat_bytes; }
};

/// The memory of one step of `g` on batches of `rows` examples.
StepMemory step_memory(const ModelGraph& g, int64_t rows);

/// "12.3 MB", "1.20 GB", "640 bytes": a byte count for messages.
std::string bytes_text(int64_t bytes);

}  // namespace pipec

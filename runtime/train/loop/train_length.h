// How long a training run goes, and what that asks of its data.
//
// `steps` alone: that many steps; `epochs` alone: that many passes over the data; both: `steps` per epoch
// (Keras' steps_per_epoch), steps x epochs in all; neither: one pass. The data pipeline is read on
// without a restart between epochs; when a finite pipeline ends before the steps are done it starts
// over, as `repeat()` would (append_data_repeat adds that stage to the plan, so a shuffle reshuffles each
// pass).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>

#include "runtime/model/train_program.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// The length asked for cannot be trained: epochs of data that repeats forever.
class TrainLengthError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainLength {
  std::optional<int64_t> steps;   // total steps, when known up front
  std::optional<int64_t> epochs;  // passes over the data, when the run ends at the end of a pass
  int64_t steps_per_epoch = 0;    // with both steps and epochs
  bool repeat_data = false;       // a finite pipeline starts over when it ends
};

/// The run's length from the train block and the command line's overrides (which win). Throws
/// TrainLengthError when it would never end.
TrainLength train_length(const TrainProgram& t, std::optional<int64_t> steps, std::optional<int64_t> epochs,
                         bool data_infinite);

/// Appends `repeat()` (or `repeat(epochs)`) to the data plan as `length` needs it.
void append_data_repeat(Plan& data, const TrainLength& length);

}  // namespace pipec

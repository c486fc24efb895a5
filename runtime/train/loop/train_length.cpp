#include "runtime/train/loop/train_length.h"

#include <fmt/format.h>

namespace pipec {

TrainLength train_length(const TrainProgram& t, std::optional<int64_t> steps, std::optional<int64_t> epochs,
                         bool data_infinite) {
  // The command line's length replaces the block's whole (its steps and epochs together).
  if (!steps && !epochs) {
    steps = t.steps;
    epochs = t.epochs;
  }
  TrainLength l;
  if (steps && epochs) {
    l.steps = *steps * *epochs;
    l.steps_per_epoch = *steps;
    l.epochs = epochs;
    l.repeat_data = !data_infinite;
  } else if (steps) {
    l.steps = steps;
    l.repeat_data = !data_infinite;
  } else {
    if (data_infinite)
      throw TrainLengthError(fmt::format(
          "train `{}` would never end: its data repeats forever and no steps are given (use --steps N)", t.name));
    l.epochs = epochs.value_or(1);
  }
  return l;
}

void append_data_repeat(Plan& data, const TrainLength& length) {
  int64_t count = -1;
  if (length.repeat_data) count = -1;
  else if (length.epochs && !length.steps && *length.epochs > 1) count = *length.epochs;
  else return;
  Stage s;
  s.kind = StageKind::Repeat;
  if (count > 0) s.args.push_back({"count", Value::make_int(count)});
  s.inputs = {static_cast<int>(data.stages.size()) - 1};
  s.element = data.stages.back().element;
  s.element.infinite = count < 0;
  data.stages.push_back(std::move(s));
}

}  // namespace pipec

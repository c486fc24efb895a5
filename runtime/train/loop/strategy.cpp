#include "runtime/train/loop/strategy.h"

#include <fmt/format.h>

namespace pipec {

StrategyChoice choose_strategy(const TrainProgram& t, const std::string& no_gpu_why) {
  StrategyChoice c;
  if (t.strategy == StrategyKind::Single) return c;
  const std::string where = t.strategy_loc.valid() ? t.strategy_loc.to_string() + ": " : std::string();
  // The training executors run on the CPU, so whatever the machine has, one CPU replica trains.
  const std::string why = !no_gpu_why.empty() ? "this machine has no usable GPU (" + no_gpu_why + ")"
                                              : "data-parallel training over several devices is not implemented yet";
  c.warning = fmt::format("{}warning: strategy {} trains one replica on the CPU: {}", where,
                          strategy_kind_name(t.strategy), why);
  return c;
}

}  // namespace pipec

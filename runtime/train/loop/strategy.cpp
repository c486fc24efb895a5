#include "runtime/train/loop/strategy.h"

#include <algorithm>

#include <fmt/format.h>

namespace pipec {

StrategyChoice choose_strategy(const TrainProgram& t, const std::string& no_gpu_why, int64_t batch, int mpi_ranks) {
  StrategyChoice c;
  const std::string where = t.strategy_loc.valid() ? t.strategy_loc.to_string() + ": " : std::string();
  const std::string name = strategy_kind_name(t.strategy);
  switch (t.strategy) {
    case StrategyKind::Single: return c;
    case StrategyKind::MultiWorker:
      if (mpi_ranks > 1) {
        c.mpi = true;
        return c;
      }
      c.note = fmt::format("{}note: strategy {} outside mpirun trains as one worker (start it with `mpirun -np N`)",
                           where, name);
      return c;
    case StrategyKind::Mirrored: break;
  }
  const MirroredDevices& d = t.devices;
  if (no_gpu_why.empty()) {
    c.device = "gpu";
    if (d.kind != MirroredDevices::Kind::All &&
        (d.kind == MirroredDevices::Kind::Count ? d.count : static_cast<int64_t>(d.ids.size())) > 1)
      c.warning = fmt::format(
          "{}warning: strategy {} trains one replica on one GPU: replicas on several GPUs are "
          "not implemented yet",
          where, name);
    return c;
  }
  const int64_t wanted = d.kind == MirroredDevices::Kind::All     ? 1
                         : d.kind == MirroredDevices::Kind::Count ? d.count
                                                                  : static_cast<int64_t>(d.ids.size());
  c.replicas = static_cast<int>(std::max<int64_t>(1, wanted));
  if (d.kind == MirroredDevices::Kind::Ids)
    c.note = fmt::format(
        "{}note: strategy {} names GPUs, and this machine has no usable GPU ({}): {} replica{} on "
        "the CPU",
        where, name, no_gpu_why, c.replicas, c.replicas == 1 ? "" : "s");
  if (batch <= 0) batch = t.step.batch;
  if (c.replicas > 1 && batch > 0 && batch % c.replicas != 0)
    c.error = fmt::format(
        "{}error: a batch of {} examples cannot be split evenly over {} replicas of strategy {}: "
        "make the batch a multiple of {}",
        where, batch, c.replicas, name, c.replicas);
  return c;
}

}  // namespace pipec

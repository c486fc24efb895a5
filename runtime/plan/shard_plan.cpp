#include "runtime/plan/shard_plan.h"

#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

Plan shard_after_sources(const Plan& plan, int64_t count, int64_t index) {
  if (count <= 1) {
    if (index != 0) throw std::invalid_argument(fmt::format("shard_index {} needs shard_count > {}", index, index));
    return plan;
  }
  if (index < 0 || index >= count)
    throw std::invalid_argument(fmt::format("shard_index {} is not in [0, {}) (shard_count {})", index, count, count));
  const size_t n = plan.stages.size();
  // A tfrecord source read by an interleave is sharded after the interleave.
  std::vector<bool> read_by_interleave(n, false);
  for (const Stage& s : plan.stages)
    if (s.kind == StageKind::Interleave)
      for (int in : s.inputs) read_by_interleave[in] = true;

  // A mixer's element i (choose_from's, sample_from's) depends on choice i and on how many elements it
  // took from each dataset before: sharding its inputs apart would not split its output. Nothing
  // under it is sharded; its own output is, as a source's.
  auto mixer = [](StageKind k) { return k == StageKind::ChooseFrom || k == StageKind::SampleFrom; };
  std::vector<bool> under_mixer(n, false);
  for (size_t i = n; i-- > 0;)
    if (mixer(plan.stages[i].kind) || under_mixer[i])
      for (int in : plan.stages[i].inputs) under_mixer[in] = true;

  Plan out;
  out.name = plan.name;
  std::vector<int> remap(n, -1);  // old stage -> the new stage its consumers read
  for (size_t i = 0; i < n; ++i) {
    Stage s = plan.stages[i];
    const bool interleave = s.kind == StageKind::Interleave;
    for (int& in : s.inputs) in = remap[in];
    const int at = static_cast<int>(out.stages.size());
    if (s.fn && s.fn->name.find('@') != std::string::npos) {
      auto fn = std::make_shared<ExprFunction>(*s.fn);
      fn->name = fmt::format("{}@{}", stage_name(s.kind), at);
      s.fn = fn;
    }
    const bool source = (s.inputs.empty() || mixer(s.kind)) && !read_by_interleave[i] && !under_mixer[i];
    out.stages.push_back(std::move(s));
    remap[i] = at;
    if (source || interleave) {
      Stage shard;
      shard.kind = StageKind::Shard;
      shard.args = {{"num_shards", Value::make_int(count)}, {"index", Value::make_int(index)}};
      shard.inputs = {at};
      shard.element = out.stages[at].element;
      shard.loc = out.stages[at].loc;
      out.stages.push_back(std::move(shard));
      remap[i] = at + 1;
    }
  }
  return out;
}

}  // namespace pipec

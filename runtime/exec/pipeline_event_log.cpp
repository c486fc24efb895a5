#include "runtime/exec/pipeline_event_log.h"

#include <vector>

#include <fmt/format.h>

#include "runtime/exec/stage_stats.h"
#include "runtime/plan/stage_kind.h"

namespace pipec {

PipelineEventLog::PipelineEventLog(const std::string& logdir, double flush_seconds)
    : file_(logdir + "/pipeline", flush_seconds) {}

void PipelineEventLog::report(const PipelineRun& run, int64_t elements, int64_t examples, double seconds) {
  std::vector<tfevent::Scalar> s;
  s.push_back({"examples_per_second", static_cast<float>(seconds > 0 ? static_cast<double>(examples) / seconds : 0)});
  const RunContext& ctx = run.context();
  std::vector<uint64_t> work;
  uint64_t total = 0;
  for (const auto& st : ctx.stats) total += work.emplace_back(st->snapshot().work_ns());
  for (size_t i = 0; i < work.size(); ++i)
    s.push_back({fmt::format("stage_share/{}_{}", i, stage_name(run.plan().stages[i].kind)),
                 static_cast<float>(total ? static_cast<double>(work[i]) / static_cast<double>(total) : 0.0)});
  file_.add_scalars(elements, s);
}

}  // namespace pipec

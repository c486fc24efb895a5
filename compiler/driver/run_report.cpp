#include "compiler/driver/run_report.h"

#include <iostream>

#include <fmt/format.h>

#include "runtime/trace/trace.h"

namespace pipec {

namespace {

std::string stage_label(const Plan& plan, int stage) {
  return fmt::format("#{} {}", stage, stage_name(plan.stages.at(stage).kind));
}

std::string param_text(KnobKind kind, int64_t value) {
  switch (kind) {
    case KnobKind::MapParallelism: return fmt::format("parallel = {}", value);
    case KnobKind::PrefetchDepth: return fmt::format("size = {}", value);
    case KnobKind::ReadAhead: return fmt::format("{} file{} read ahead", value, value == 1 ? "" : "s");
  }
  return "?";
}

}  // namespace

void print_memory_line(std::ostream& out, const PipelineRun& run) {
  const MemoryBudget& m = run.memory();
  out << fmt::format("  memory      {} at most in stage buffers (budget {})\n", format_bytes(m.peak()),
                     format_bytes(m.limit()));
}

void print_bottleneck_line(std::ostream& out, const PipelineRun& run) {
  const Bottleneck b = run.autotuner().bottleneck();
  if (b.kind == Bottleneck::Kind::None) return;
  if (b.kind == Bottleneck::Kind::Consumer) {
    out << fmt::format("  bottleneck: {}\n", b.why);
    return;
  }
  out << fmt::format("  bottleneck: {} ({:.0f}% of the pipeline's work): {}\n", stage_label(run.plan(), b.stage),
                     100 * b.share, b.why);
}

void print_autotune(std::ostream& out, const PipelineRun& run, bool explain) {
  const Autotuner& t = run.autotuner();
  const std::vector<Autotuner::Pick> picks = t.picks();
  bool any = false;
  for (const auto& p : picks) any = any || p.tunable || p.overridden || explain;
  if (!any) return;
  out << fmt::format("  autotune ({} decision{}):\n", t.decisions(), t.decisions() == 1 ? "" : "s");
  for (const auto& p : picks) {
    if (!p.tunable && !p.overridden && !explain) continue;
    out << fmt::format("    {:<14} {}: {}\n", stage_label(run.plan(), p.stage), param_text(p.kind, p.value), p.reason);
  }
  if (const Autotuner::Workers w = t.workers(); !w.reason.empty())
    out << fmt::format("    {:<14} workers = {}: {}\n", "pool", w.value, w.reason);
  if (!explain) return;
  const ModelInput in = t.whole_run_model();
  const Autotuner::Workers w = t.workers();
  const std::string taking = w.value < in.threads ? fmt::format(", {} taking its tasks", w.value) : "";
  out << fmt::format("  the model over the whole run ({} thread{} for the pipeline{}; per output element):\n",
                     in.threads, in.threads == 1 ? "" : "s", taking);
  out << fmt::format("    {:<18} {:>8} {:>12} {:>12}\n", "stage", "thread", "on it (us)", "tasks (us)");
  for (const ModelStage& s : in.stages) {
    if (s.sync_ns == 0 && s.task_ns == 0) continue;
    const std::string thread = s.segment == 0 ? "consumer" : fmt::format("prefetch{}", s.segment);
    out << fmt::format("    {:<18} {:>8} {:>12.2f} {:>12.2f}\n", s.label, thread, s.sync_ns / 1e3, s.task_ns / 1e3);
  }
  out << fmt::format("    {:<18} {:>8} {:>12.2f}\n", "(the consumer)", "consumer", in.consumer_ns / 1e3);
  const std::vector<Autotuner::Change> changes = t.changes();
  if (changes.empty()) {
    out << "  no parameter changed while running\n";
    return;
  }
  out << "  changes:\n";
  for (const auto& c : changes)
    out << fmt::format("    {:7.3f} s  {:<14} {} -> {}\n", c.seconds, stage_label(run.plan(), c.stage),
                       param_text(c.kind, c.from), c.to);
}

RunFacts run_facts(const PipelineRun& run, bool all_passes) {
  RunFacts f;
  f.plan = &run.plan();
  const RunContext& ctx = run.context();
  for (size_t i = 0; i < run.plan().stages.size(); ++i) {
    const StageStatsSnapshot snap = ctx.stats[i]->snapshot();
    f.stages.push_back({snap.work_ns() / 1e9, snap.busy_ns / 1e9, snap.elements_out, snap.bytes});
    // A pass the plan knows the length of, or the first one the run completed.
    std::optional<int64_t> pass = run.pass_elements(static_cast<int>(i));
    if (!pass && ctx.stats[i]->first_pass_elements() >= 0) pass = ctx.stats[i]->first_pass_elements();
    f.pass_elements.push_back(pass);
  }
  f.bottleneck = run.autotuner().bottleneck();
  f.threads = ctx.threads;
  f.cores = ThreadPool::default_size();
  f.memory_budget = run.memory().limit();
  f.all_passes = all_passes;
  f.gpu = ctx.gpu != nullptr;
  return f;
}

void print_advice(std::ostream& out, const std::vector<Advice>& advice) {
  if (advice.empty()) return;
  out << "  advice:\n";
  for (const Advice& a : advice) out << fmt::format("    - {} [{}]\n", a.text, a.rule);
}

void add_autotune_json(nlohmann::ordered_json& j, const PipelineRun& run, const std::vector<Advice>& advice) {
  using Json = nlohmann::ordered_json;
  const MemoryBudget& m = run.memory();
  Json stages = Json::array();
  for (size_t i = 0; i < run.plan().stages.size(); ++i) {
    const MemoryBudget::StageUse u = m.stage_use(static_cast<int>(i));
    if (u.peak == 0) continue;
    stages.push_back(Json{{"index", i}, {"peak_bytes", u.peak}});
  }
  j["memory"] = Json{{"budget_bytes", m.limit()}, {"peak_bytes", m.peak()}, {"stages", std::move(stages)}};
  const Bottleneck b = run.autotuner().bottleneck();
  const char* kinds[] = {"none", "thread", "map", "reader", "cpu", "consumer"};
  j["bottleneck"] =
      Json{{"stage", b.stage},
           {"op", b.stage >= 0 ? std::string(stage_name(run.plan().stages.at(b.stage).kind)) : std::string()},
           {"kind", kinds[static_cast<int>(b.kind)]},
           {"share", b.share},
           {"why", b.why}};
  Json picks = Json::array();
  for (const auto& p : run.autotuner().picks())
    picks.push_back(Json{{"stage", p.stage},
                         {"param", knob_param(p.kind)},
                         {"value", p.value},
                         {"tunable", p.tunable},
                         {"overridden", p.overridden},
                         {"reason", p.reason}});
  const Autotuner::Workers w = run.autotuner().workers();
  j["autotune"] = Json{{"decisions", run.autotuner().decisions()},
                       {"picks", std::move(picks)},
                       {"workers", Json{{"value", w.value}, {"of", w.of}, {"reason", w.reason}}}};
  Json said = Json::array();
  for (const Advice& a : advice) said.push_back(Json{{"rule", a.rule}, {"stage", a.stage}, {"text", a.text}});
  j["advice"] = std::move(said);
}

bool write_run_trace(const std::string& path) {
  if (path.empty()) return true;
  trace::stop();
  std::string error;
  if (trace::write_json(path, &error)) return true;
  std::cerr << "pipec run: " << error << "\n";
  return false;
}

}  // namespace pipec

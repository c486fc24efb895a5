#include "compiler/advice/facts.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/passes/plan_edit.h"

namespace pipec {

std::string stage_label(const Plan& plan, int stage) {
  return fmt::format("#{} {}", stage, stage_name(plan.stages.at(stage).kind));
}

double total_work(const RunFacts& facts) {
  double t = 0;
  for (const StageFacts& s : facts.stages) t += s.work_seconds;
  return t;
}

double work_share(const RunFacts& facts, int stage) {
  const double t = total_work(facts);
  return t > 0 ? facts.stages.at(stage).work_seconds / t : 0;
}

std::string percent(double share) { return fmt::format("{:.0f}%", 100 * share); }

std::vector<int> upstream_of(const Plan& plan, int stage) {
  std::vector<bool> seen(plan.stages.size(), false);
  std::vector<int> todo = plan.stages.at(stage).inputs;
  while (!todo.empty()) {
    const int s = todo.back();
    todo.pop_back();
    if (seen[s]) continue;
    seen[s] = true;
    for (int in : plan.stages[s].inputs) todo.push_back(in);
  }
  std::vector<int> out;
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i]) out.push_back(static_cast<int>(i));
  return out;
}

double measured_element_bytes(const RunFacts& facts, int stage) {
  const StageFacts& s = facts.stages.at(stage);
  return s.elements_out ? static_cast<double>(s.bytes_out) / static_cast<double>(s.elements_out) : 0;
}

int64_t repeat_count(const Stage& s) {
  if (s.kind != StageKind::Repeat && s.kind != StageKind::ShuffleRepeat) return 1;
  const Value* c = s.arg("count");
  return c && c->kind == Value::Int ? c->i : -1;
}

std::vector<int> threads_of(const Plan& plan) {
  const int n = static_cast<int>(plan.stages.size());
  std::vector<int> thread(n, -1);
  int next = 1;
  // From the output back: a prefetch's inputs run on a thread of its own.
  std::vector<std::pair<int, int>> todo;
  if (n > 0) todo.push_back({n - 1, 0});
  while (!todo.empty()) {
    auto [s, t] = todo.back();
    todo.pop_back();
    if (thread[s] >= 0) continue;
    thread[s] = t;
    const int inner = plan.stages[s].kind == StageKind::Prefetch ? next++ : t;
    for (int in : plan.stages[s].inputs) todo.push_back({in, inner});
  }
  return thread;
}

bool draws_random(const Stage& s) { return s.fn && has_random_ops(*s.fn); }

int64_t fixed_parallel(const Stage& s) {
  const Value* p = s.arg("parallel");
  return p && p->kind == Value::Int ? p->i : 0;
}

bool fixed_parallel_limits(const RunFacts& f) {
  const Bottleneck& b = f.bottleneck;
  if (b.stage < 0 || (b.kind != Bottleneck::Kind::Segment && b.kind != Bottleneck::Kind::Map)) return false;
  const Stage& s = f.plan->stages.at(b.stage);
  if (!stage_has(s.kind, StageFlag::Function)) return false;
  const int64_t p = fixed_parallel(s);
  return p > 0 && p < f.threads;
}

}  // namespace pipec

#include "compiler/passes/inner_pipelines.h"

#include <map>
#include <memory>
#include <optional>

#include "runtime/plan/plan.h"

namespace pipec {

namespace {

// The argument that marks a bound stage while the passes run: its value is the stage's index as lowered.
// No stage takes an argument by this name, so no pass reads it.
constexpr const char* kMark = "inner_pipelines.bound_stage";

// Removes the marks from `plan`; the new index of each marked stage by its old one, or nothing when a
// mark is gone or on two stages.
std::optional<std::map<int64_t, int64_t>> take_marks(Plan& plan, size_t marks) {
  std::map<int64_t, int64_t> moved;
  bool twice = false;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    auto& args = plan.stages[i].args;
    for (auto it = args.begin(); it != args.end();) {
      if (it->first != kMark) {
        ++it;
        continue;
      }
      twice = twice || !moved.emplace(it->second.i, static_cast<int64_t>(i)).second;
      it = args.erase(it);
    }
  }
  if (twice || moved.size() != marks) return std::nullopt;
  return moved;
}

// One flat_map's inner pipeline, optimized; `bind` (the stage's argument, or null) renumbered to match.
Plan optimize_one(const Plan& lowered, Value* bind, const PassOptions& options) {
  Plan plan = lowered;
  std::map<int64_t, bool> marked;
  if (bind)
    for (const Value& b : bind->items) {
      const int64_t stage = b.items.at(0).i;
      if (marked.emplace(stage, true).second)
        plan.stages.at(static_cast<size_t>(stage)).args.push_back({kMark, Value::make_int(stage)});
    }
  run_passes(plan, options);  // which optimizes the inner pipelines of this one in turn
  const auto moved = take_marks(plan, marked.size());
  if (!moved) {
    Plan kept = lowered;  // no pass runs on it, so it may share the lowered functions
    optimize_inner_pipelines(kept, options);
    return kept;
  }
  if (bind)
    for (Value& b : bind->items) b.items.at(0).i = moved->at(b.items.at(0).i);
  return plan;
}

}  // namespace

void optimize_inner_pipelines(Plan& plan, const PassOptions& options) {
  PassOptions inner;
  inner.opt_level = options.opt_level;
  inner.disabled = options.disabled;
  inner.disabled.push_back("prefetch_injection");
  for (Stage& s : plan.stages) {
    if (!s.inner) continue;
    Value* bind = nullptr;
    for (auto& [name, value] : s.args)
      if (name == "bind") bind = &value;
    s.inner = std::make_shared<const Plan>(optimize_one(*s.inner, bind, inner));
  }
}

}  // namespace pipec

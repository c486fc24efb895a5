#include "compiler/passes/repeated_jpeg_index.h"

#include <algorithm>

#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

constexpr int64_t kForever = int64_t{1} << 40;

int64_t times(int64_t a, int64_t b) { return a >= kForever / std::max<int64_t>(b, 1) ? kForever : a * b; }

// How many passes over its input a stage makes: a repeat's count (forever without one), else 1.
int64_t passes_of(const Stage& s) {
  if (s.kind != StageKind::Repeat && s.kind != StageKind::ShuffleRepeat) return 1;
  const Value* count = s.arg("count");
  return count && count->is_number() && count->as_double() >= 0
             ? std::max<int64_t>(1, static_cast<int64_t>(count->as_double()))
             : kForever;
}

// The passes the repeats upstream of `stage` (itself included) make over the sources.
int64_t passes_upstream(const Plan& plan, int stage) {
  const Stage& s = plan.stages[static_cast<size_t>(stage)];
  int64_t most = 1;
  for (int in : s.inputs) most = std::max(most, passes_upstream(plan, in));
  return times(passes_of(s), most);
}

// The passes the repeats downstream of `stage` make over it; a cache in between replays the first
// pass instead of running `stage` again.
int64_t passes_downstream(const Plan& plan, int stage) {
  int64_t most = 1;
  for (int c : consumers(plan, stage)) {
    const Stage& s = plan.stages[static_cast<size_t>(c)];
    if (s.kind == StageKind::Cache) continue;
    most = std::max(most, times(passes_of(s), passes_downstream(plan, c)));
  }
  return most;
}

}  // namespace

bool repeated_jpeg_index(Plan& plan) {
  bool changed = false;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    Stage& s = plan.stages[i];
    if (!s.fn || s.kind != StageKind::Map || s.inputs.size() != 1) continue;
    const int64_t runs = times(passes_upstream(plan, s.inputs[0]), passes_downstream(plan, static_cast<int>(i)));
    if (runs < kMinRepeatedPasses) continue;
    for (Instr& in : s.fn->body) {
      if (in.op != OpKind::DecodeJpeg || !in.attrs.count("crop") || in.attrs.count("index")) continue;
      in.attrs["index"] = Value::make_bool(true);
      changed = true;
    }
  }
  return changed;
}

}  // namespace pipec

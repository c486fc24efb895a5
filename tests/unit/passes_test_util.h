// Helpers for the optimizer tests: a checked and lowered plan from spec text, and the ops of a plan.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/exec/pipeline_run.h"
#include "runtime/plan/plan.h"
#include "tests/unit/compile_util.h"

namespace pipec::testing {

/// The lowered (unoptimized) plan of pipeline `name` in `text`; fails the test on spec errors.
inline Plan plan_of(const std::string& text, const std::string& name = "p") { return compiled_plan(text, name); }

/// "range map batch": the stage ops in order.
inline std::string ops_of(const Plan& plan) {
  std::string s;
  for (const Stage& st : plan.stages) s += (s.empty() ? "" : " ") + std::string(stage_name(st.kind));
  return s;
}

/// The ops of a function's body, parameters left out: "add mul".
inline std::string body_ops(const ExprFunction& fn) {
  std::string s;
  for (const Instr& in : fn.body)
    if (in.op != OpKind::Param) s += (s.empty() ? "" : " ") + std::string(op_name(in.op));
  return s;
}

/// A copy of `p` whose functions are copies too, so a pass run on it leaves `p` as it was.
inline Plan copy_plan(const Plan& p) {
  Plan c = p;
  for (Stage& s : c.stages)
    if (s.fn) s.fn = std::make_shared<ExprFunction>(*s.fn);
  return c;
}

/// Every output tensor of a run of `plan`, element by element, field by field. `map_parallel` > 0 fixes
/// every `parallel = auto` map at that value (1: on the thread that pulls from it, no pool tasks).
inline std::vector<Tensor> run_tensors(const Plan& plan, uint64_t seed, int threads, int64_t map_parallel = 0) {
  RunOptions o;
  o.seed = seed;
  o.threads = threads;
  if (map_parallel > 0) o.auto_values = {{KnobKind::MapParallelism, map_parallel}};
  PipelineRun run(plan, o);
  std::vector<Tensor> out;
  Chunk c;
  while (run.next(c))
    for (int64_t r = 0; r < c.rows; ++r)
      for (const Column& col : c.columns) out.push_back(column_row(col, r));
  return out;
}

}  // namespace pipec::testing

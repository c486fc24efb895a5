// Running small pipelines in tests of single stages: each element as text, the whole stream, and the
// check that resuming from a checkpoint after every element continues exactly as the run that never
// stopped.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/passes/pass_pipeline.h"
#include "runtime/exec/pipeline_run.h"
#include "tests/unit/passes_test_util.h"

namespace pipec::testing {

/// Elements as text: `name=v` per field joined by spaces; a tensor as [a,b] (nested for rank 2 and
/// more, flattened), i64, i32, f32 and byte strings spelled out, other dtypes as `?`.
using Elements = std::vector<std::string>;

inline std::string row_text(const Chunk& c, int64_t r, const ElementInfo& e) {
  std::string s;
  for (size_t f = 0; f < c.columns.size(); ++f) {
    Tensor t = column_row(c.columns[f], r);
    std::string v;
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if (t.dtype() == DType::I64) v += fmt::format("{}{}", i ? "," : "", t.data<int64_t>()[i]);
      else if (t.dtype() == DType::I32) v += fmt::format("{}{}", i ? "," : "", t.data<int32_t>()[i]);
      else if (t.dtype() == DType::F32) v += fmt::format("{}{}", i ? "," : "", t.data<float>()[i]);
      else if (t.dtype() == DType::Bytes) v += fmt::format("{}\"{}\"", i ? "," : "", t.str(i));
      else v += fmt::format("{}?", i ? "," : "");
    }
    if (!t.shape().empty()) v = "[" + v + "]";
    s += fmt::format("{}{}={}", f ? " " : "", e.fields.at(f).name, v);
  }
  return s;
}

inline RunOptions run_options(int64_t chunk_rows, int threads = 2) {
  RunOptions o;
  o.seed = 3;
  o.threads = threads;
  o.chunk_rows = chunk_rows;
  return o;
}

/// The optimized plan of `pipeline p = <pipeline>` (after `decls`, when given).
inline Plan optimized_plan(const std::string& pipeline, const std::string& decls = "") {
  Plan plan = plan_of(decls + "pipeline p = " + pipeline + "\n");
  if (plan.stages.empty()) throw std::runtime_error("the pipeline does not check: " + pipeline);
  run_passes(plan, PassOptions{});
  return plan;
}

inline Elements drain(PipelineRun& run, const Plan& plan) {
  Elements out;
  Chunk c;
  while (run.next(c))
    for (int64_t r = 0; r < c.rows; ++r) out.push_back(row_text(c, r, plan.stages.back().element));
  return out;
}

inline Elements run_plan_text(const Plan& plan, int64_t chunk_rows, int threads = 2) {
  PipelineRun run(plan, run_options(chunk_rows, threads));
  return drain(run, plan);
}

/// Saving after every element (chunks of one row) and resuming from each state in a new run gives the
/// rest of the uninterrupted stream; chunks of 4 rows and 4 threads give the same stream.
inline void expect_resumes_after_every_element(const Plan& plan) {
  const Elements want = run_plan_text(plan, 1);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(run_plan_text(plan, 4, 4), want) << "chunks of 4 rows, 4 threads";
  for (size_t stop = 0; stop <= want.size(); ++stop) {
    std::string state;
    {
      PipelineRun first(plan, run_options(1));
      Chunk c;
      size_t seen = 0;
      while (seen < stop && first.next(c)) seen += static_cast<size_t>(c.rows);
      ASSERT_EQ(seen, stop);
      state = first.save_state();
    }
    PipelineRun resumed(plan, run_options(1));
    resumed.restore_state(state, "test");
    EXPECT_EQ(drain(resumed, plan), Elements(want.begin() + static_cast<std::ptrdiff_t>(stop), want.end()))
        << "resumed at " << stop;
  }
}

}  // namespace pipec::testing

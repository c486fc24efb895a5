// Plans for tests, made by compile() (compiler/compile) the way every pipec command makes them:
// checked, lowered, verified, and optimized and given kernels when the options say so.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "compiler/compile/compile.h"

namespace pipec::testing {

/// The plan as lowered and verified: -O0, no kernels.
inline CompileOptions lowered_only() {
  CompileOptions o;
  o.passes.opt_level = 0;
  return o;
}

/// What went wrong with `r`: its diagnostics and its error.
inline std::string compile_problems(const CompileResult& r) {
  std::ostringstream out;
  r.program->diags.print(out, false);
  return out.str() + r.error;
}

/// The plan of pipeline `name` of the spec `text` (empty name: the only pipeline, or the one a train
/// block reads); fails the test when it does not compile.
inline Plan compiled_plan(const std::string& text, const std::string& name = "",
                          const CompileOptions& options = lowered_only(), const std::string& path = "test.pipe") {
  CompileResult r = compile_text(path, text, name, options);
  EXPECT_TRUE(r.ok()) << compile_problems(r);
  return r.ok() ? std::move(r.pipelines[0].plan) : Plan{};
}

/// The plan of every pipeline of the spec file `path`, in order; fails the test when it does not compile.
inline std::vector<Plan> compiled_plans_of_file(const std::string& path,
                                                const CompileOptions& options = lowered_only()) {
  CompileRequest request;
  request.path = path;
  request.target = CompileTarget::EveryPipeline;
  request.options = options;
  CompileResult r = compile(request);
  EXPECT_TRUE(r.ok()) << compile_problems(r);
  std::vector<Plan> plans;
  for (CompiledPipeline& p : r.pipelines) plans.push_back(std::move(p.plan));
  return plans;
}

}  // namespace pipec::testing

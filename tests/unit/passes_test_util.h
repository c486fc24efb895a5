// Helpers for the optimizer tests: a checked and lowered plan from spec text, and the ops of a plan.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/lower.h"
#include "compiler/sema/program.h"
#include "runtime/plan/plan.h"

namespace pipec::testing {

/// The lowered (unoptimized) plan of pipeline `name` in `text`; fails the test on spec errors.
inline Plan plan_of(const std::string& text, const std::string& name = "p") {
  auto program = check_text("test.pipe", text);
  std::string diags;
  for (const auto& d : program->diags.all()) diags += d.message + "\n";
  EXPECT_FALSE(program->diags.has_errors()) << diags;
  for (const auto& d : program->main().decls)
    if (d->kind == DeclKind::Pipeline && d->name == name) {
      Plan plan = lower_pipeline(*program, *d);
      EXPECT_TRUE(verify_plan(plan).empty());
      return plan;
    }
  ADD_FAILURE() << "no pipeline " << name;
  return {};
}

/// "range map batch": the stage ops in order.
inline std::string ops_of(const Plan& plan) {
  std::string s;
  for (const Stage& st : plan.stages) s += (s.empty() ? "" : " ") + st.op;
  return s;
}

/// The ops of a function's body, parameters left out: "add mul".
inline std::string body_ops(const ExprFunction& fn) {
  std::string s;
  for (const Instr& in : fn.body)
    if (in.op != "param") s += (s.empty() ? "" : " ") + in.op;
  return s;
}

}  // namespace pipec::testing
